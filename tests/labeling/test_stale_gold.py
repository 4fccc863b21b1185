"""Gold is never overwritten from a stale page: a decision or a label correction made on a page that showed
an older revision is answered 409 with the current answer and a button to confirm the change; nothing is
written until it is confirmed (issue 20 item 8)."""

from __future__ import annotations

import re

import pytest
from django.urls import reverse

from evals.models import Criterion
from labeling.models import GoldDispute, GoldLabel
from tests.factories import annotate_directly, labeling_setup

pytestmark = pytest.mark.django_db


@pytest.fixture
def split(annotator, annotator2):
    """Two annotators who disagree on correct_amount."""
    eval_set, rv, (output,) = labeling_setup()
    annotate_directly(output, rv, annotator, {"correct_amount": ("PASS", "NONE"), "next_step": ("PASS", "NONE")})
    annotate_directly(output, rv, annotator2, {"correct_amount": ("FAIL", "NONE"), "next_step": ("PASS", "NONE")})
    return output, Criterion.objects.get(rubric_version=rv, key="correct_amount")


def item_url(output, criterion):
    return reverse("labeling:adjudicate", args=[output.pk, criterion.pk])


def hidden_base(page: str) -> str:
    """The revision the page's gold form was made on, as the browser would post it."""
    (value,) = re.findall(r'<input type="hidden" name="based_on" value="([^"]*)"', page)
    return value


def gold_rows():
    return list(GoldLabel.objects.order_by("revision").values_list("outcome", "revision", "is_current"))


def test_a_fresh_form_saves_as_before(client, reviewer, split):
    output, criterion = split
    client.force_login(reviewer)
    page = client.get(item_url(output, criterion)).content.decode()
    response = client.post(
        item_url(output, criterion), {"outcome": "FAIL", "rationale": "r", "based_on": hidden_base(page)}
    )
    assert response.status_code == 302
    assert gold_rows() == [("FAIL", 1, True)]


def test_a_second_tab_is_stopped_by_someone_elses_decision_until_confirmed(client, reviewer, lead, split):
    output, criterion = split
    client.force_login(reviewer)
    tab = client.get(item_url(output, criterion)).content.decode()  # the reviewer's tab, loaded now
    client.force_login(lead)
    lead_page = client.get(item_url(output, criterion)).content.decode()
    data = {"outcome": "FAIL", "rationale": "The tool result says 40.", "based_on": hidden_base(lead_page)}
    assert client.post(item_url(output, criterion), data).status_code == 302

    client.force_login(reviewer)
    data = {"outcome": "PASS", "rationale": "Matches the policy.", "based_on": hidden_base(tab)}
    response = client.post(item_url(output, criterion), data)
    assert response.status_code == 409
    page = response.content.decode()
    assert gold_rows() == [("FAIL", 1, True)]  # nothing written
    assert "lead saved a gold label for this item after this page was loaded" in page
    assert "The tool result says 40." in page  # the current gold and its reason, on the page
    assert "Change the gold label from FAIL to PASS" in page  # the confirm button
    # The confirm form re-posts what was typed, on top of the revision now current.
    assert hidden_base(page) == "1"
    assert 'value="PASS" checked' in page and ">Matches the policy.</textarea>" in page

    response = client.post(item_url(output, criterion), {**data, "based_on": hidden_base(page)})
    assert response.status_code == 302
    assert gold_rows() == [("FAIL", 1, False), ("PASS", 2, True)]


def test_back_to_your_own_decision_is_stopped_too(client, reviewer, split):
    """Back after Save gold label shows the page as it was before: saving it again must not pass silently."""
    output, criterion = split
    client.force_login(reviewer)
    before = client.get(item_url(output, criterion)).content.decode()
    data = {"outcome": "FAIL", "rationale": "first look", "based_on": hidden_base(before)}
    assert client.post(item_url(output, criterion), data).status_code == 302
    # Back: the same page, the same form, another answer.
    data = {"outcome": "PASS", "rationale": "second look", "based_on": hidden_base(before)}
    response = client.post(item_url(output, criterion), data)
    assert response.status_code == 409
    assert "You already saved a gold label for this item after this page was loaded" in response.content.decode()
    assert gold_rows() == [("FAIL", 1, True)]


def test_a_decision_that_resolves_a_dispute_is_checked_against_the_disputed_revision(client, reviewer, lead, split):
    output, criterion = split
    client.force_login(lead)
    client.post(item_url(output, criterion), {"outcome": "FAIL", "rationale": "first", "based_on": 0})
    GoldDispute.objects.create(
        output=output,
        rubric_version=criterion.rubric_version,
        criterion=criterion,
        disputed_outcome="FAIL",
        disputed_revision=1,
        reason="Re-read it.",
        raised_by=lead,
    )
    client.force_login(reviewer)
    tab = client.get(item_url(output, criterion)).content.decode()
    assert hidden_base(tab) == "1"
    client.force_login(lead)
    client.post(item_url(output, criterion), {"outcome": "PASS", "rationale": "lead re-read", "based_on": 1})
    client.force_login(reviewer)
    data = {"outcome": "FAIL", "rationale": "still wrong", "based_on": hidden_base(tab)}
    response = client.post(item_url(output, criterion), data)
    assert response.status_code == 409
    assert gold_rows() == [("FAIL", 1, False), ("PASS", 2, True)]


# --- Label corrections -------------------------------------------------------------------------


@pytest.fixture
def submitted(client, annotator):
    """The annotator's submitted annotation: correct_amount PASS, next_step PASS (revision 1 each)."""
    from labeling.models import Annotation
    from tests.labeling_helpers import next_url, save_url, submit_url

    eval_set, rv, _ = labeling_setup()
    client.force_login(annotator)
    client.post(next_url(eval_set))
    annotation = Annotation.objects.get()
    for key, quote in (("correct_amount", "refund of $40.00"), ("next_step", "NONE")):
        data = {"criterion": key, "outcome": "PASS", "evidence": quote, "rubric_version": rv.pk}
        assert client.post(save_url(annotation), data, HTTP_HX_REQUEST="true").status_code == 200
    assert client.post(submit_url(annotation), {"rubric_version": rv.pk}).status_code == 302
    return annotation


def page_of(client, annotation, query=""):
    from tests.labeling_helpers import page_url

    return client.get(page_url(annotation) + query).content.decode()


def criterion_base(page: str, key: str) -> str:
    form = page[page.index(f'id="criterion-{key}"') :]
    return re.search(r'name="based_on" value="([^"]*)"', form).group(1)


def correct(client, annotation, base, outcome="FAIL", htmx=True):
    from tests.labeling_helpers import save_url

    data = {
        "criterion": "correct_amount",
        "outcome": outcome,
        "evidence": "NONE",
        "rubric_version": annotation.rubric_version_id,
        "based_on": base,
    }
    return client.post(save_url(annotation), data, **({"HTTP_HX_REQUEST": "true"} if htmx else {}))


def label_rows():
    from labeling.models import Label

    rows = Label.objects.filter(criterion__key="correct_amount").order_by("revision")
    return list(rows.values_list("outcome", "revision", "is_current"))


def test_a_fresh_correction_saves_as_before(client, submitted):
    base = criterion_base(page_of(client, submitted, "?correct=1"), "correct_amount")
    assert base == "1"
    assert correct(client, submitted, base).status_code == 200
    assert label_rows() == [("PASS", 1, False), ("FAIL", 2, True)]


@pytest.mark.parametrize("htmx", [True, False], ids=["htmx", "full-page"])
def test_a_correction_from_a_second_tab_is_stopped_until_confirmed(client, submitted, htmx):
    tab1 = page_of(client, submitted, "?correct=1")
    tab2 = page_of(client, submitted, "?correct=1")
    assert correct(client, submitted, criterion_base(tab1, "correct_amount"), "FAIL").status_code == 200
    response = correct(client, submitted, criterion_base(tab2, "correct_amount"), "ABSTAIN", htmx=htmx)
    assert response.status_code == 409
    page = response.content.decode()
    assert "This answer was corrected after this page was loaded. It is now FAIL with “NONE” (revision 2)." in page
    assert label_rows() == [("PASS", 1, False), ("FAIL", 2, True)]  # nothing written
    assert "Replace it with mine" in page
    assert 'value="ABSTAIN" checked' in page  # what was typed is kept
    assert criterion_base(page, "correct_amount") == "2"  # the confirm re-posts on the current revision
    assert correct(client, submitted, "2", "ABSTAIN", htmx=htmx).status_code in (200, 302)
    assert label_rows() == [("PASS", 1, False), ("FAIL", 2, False), ("ABSTAIN", 3, True)]


def test_a_draft_page_left_open_after_submit_does_not_correct_silently(client, submitted):
    """Back after Submit (or another tab) shows the draft: a change there is a correction and is confirmed."""
    response = correct(client, submitted, "draft", "FAIL")
    assert response.status_code == 409
    assert "This case was submitted after this page was loaded" in response.content.decode()
    assert label_rows() == [("PASS", 1, True)]


def test_draft_saves_are_unchanged(client, annotator):
    from labeling.models import Annotation, Label
    from tests.labeling_helpers import next_url, save_url

    eval_set, rv, _ = labeling_setup()
    client.force_login(annotator)
    client.post(next_url(eval_set))
    annotation = Annotation.objects.get()
    assert criterion_base(page_of(client, annotation), "correct_amount") == "draft"
    for outcome in ("PASS", "FAIL"):
        data = {"criterion": "correct_amount", "outcome": outcome, "evidence": "NONE", "rubric_version": rv.pk}
        assert client.post(save_url(annotation), data, HTTP_HX_REQUEST="true").status_code == 200
    assert list(Label.objects.values_list("outcome", "revision")) == [("FAIL", 1)]


# --- Disputes ----------------------------------------------------------------------------------


def test_a_dispute_from_a_page_that_showed_an_older_gold_is_refused(client, lead, reviewer):
    """A dispute names the gold it doubts: if a reviewer decided again since the page was loaded, the lead
    has not read the gold they would be disputing."""
    from tests.factories import calibration_set, make_eval_set, make_judge, make_rubric_version

    es, rv, judge = make_eval_set("cal"), make_rubric_version("refund", "1"), make_judge("gpt-judge")
    # Labels PASS, FAIL adjudicated FAIL, the judge says PASS: a false pass (tests/factories.py).
    (_, adjudicated) = calibration_set(
        es,
        rv,
        judge,
        [{"correct_amount": ("PASS", "PASS", "PASS")}, {"correct_amount": ("PASS", "FAIL", "PASS", "FAIL")}],
    )
    criterion = rv.criteria.get(key="correct_amount")
    client.force_login(lead)
    drilldown = reverse("calibration:drilldown", args=[es.pk, rv.pk, judge.pk, "correct_amount", "false-pass"])
    page = client.get(drilldown).content.decode()
    assert '<input type="hidden" name="gold_revision" value="1">' in page
    dispute = reverse("calibration:dispute_gold", args=[es.pk, rv.pk, judge.pk, "correct_amount", "false-pass"])

    client.force_login(reviewer)
    data = {"outcome": "PASS", "rationale": "Re-read: it matches.", "based_on": 1}
    assert client.post(item_url(adjudicated, criterion), data).status_code == 302
    client.force_login(lead)
    response = client.post(
        dispute, {"output": adjudicated.pk, "reason": "Is FAIL right?", "gold_revision": 1}, follow=True
    )
    assert "The gold label changed after this page was loaded: it is now PASS (revision 2, rev)" in (
        response.content.decode()
    )
    assert not GoldDispute.objects.exists()
    # Negative control: from the page as it is now, the dispute is raised.
    client.post(dispute, {"output": adjudicated.pk, "reason": "Is PASS right?", "gold_revision": 2})
    assert GoldDispute.objects.get().disputed_revision == 2
