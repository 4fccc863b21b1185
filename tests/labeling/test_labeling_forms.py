"""Bad input on the labeling endpoints: a clear message, and nothing half-saved."""

from __future__ import annotations

import pytest

from labeling.models import Annotation, Label
from tests.factories import annotate_directly, labeling_setup, make_rubric_version
from tests.labeling_helpers import next_url, page_url, save_url, submit_url

pytestmark = pytest.mark.django_db


@pytest.fixture
def draft(client, annotator):
    eval_set, rv, (output,) = labeling_setup()
    client.force_login(annotator)
    client.post(next_url(eval_set))
    return Annotation.objects.get()


def post_save(client, annotation, htmx=True, **data):
    data.setdefault("criterion", "correct_amount")
    data.setdefault("rubric_version", annotation.rubric_version_id)
    headers = {"HTTP_HX_REQUEST": "true"} if htmx else {}
    return client.post(save_url(annotation), data, **headers)


def snapshot():
    return sorted(Label.objects.values_list("annotation_id", "criterion_id", "outcome", "evidence", "revision"))


def test_a_valid_save_returns_the_criterion_partial(client, draft):
    r = post_save(client, draft, outcome="PASS", evidence="refund of $40.00")
    body = r.content.decode()
    assert r.status_code == 200
    assert body.lstrip().startswith('<form id="criterion-correct_amount"')
    assert "<html" not in body
    assert "the quote is in the transcript" in body


def test_unknown_criterion_is_refused(client, draft):
    r = post_save(client, draft, criterion="tone", outcome="PASS", evidence="NONE")
    assert r.status_code == 400  # no criterion partial to swap: a plain message the page shows
    assert r["Content-Type"].startswith("text/plain")
    assert "Unknown criterion “tone”" in r.content.decode()
    assert "correct_amount, next_step" in r.content.decode()
    r = post_save(client, draft, htmx=False, criterion="", outcome="PASS", evidence="NONE")
    assert r.status_code == 302
    assert not Label.objects.exists()


def test_an_outcome_outside_the_vocabulary_is_refused(client, draft):
    post_save(client, draft, outcome="PASS", evidence="NONE")
    before = snapshot()
    r = post_save(client, draft, outcome="MAYBE", evidence="NONE")
    assert r.status_code == 422
    body = r.content.decode()
    assert "“MAYBE” is not an outcome. Use one of PASS, FAIL, N/A, Can&#x27;t tell." in body
    assert 'id="criterion-correct_amount"' in body  # the message lands on the criterion it is about
    assert snapshot() == before


def test_a_quote_that_is_not_in_the_transcript_is_refused_and_the_old_answer_kept(client, draft):
    post_save(client, draft, outcome="PASS", evidence="refund of $40.00")
    before = snapshot()
    r = post_save(client, draft, outcome="FAIL", evidence="refund of $45.00")
    assert r.status_code == 422
    body = r.content.decode()
    assert "This quote is not in the transcript" in body
    assert "refund of $45.00" in body  # what was typed is shown back, not lost
    assert 'value="FAIL" checked' in body
    assert snapshot() == before


def test_the_reference_is_not_quotable(client, draft):
    r = post_save(client, draft, outcome="PASS", evidence="Refund $40.00 for the duplicate charge.")
    assert r.status_code == 422
    assert not Label.objects.exists()


def test_a_quote_matches_whatever_the_whitespace_and_none_is_accepted_in_any_case(client, draft):
    assert post_save(client, draft, outcome="PASS", evidence="  refund  of\n$40.00 ").status_code == 200
    assert Label.objects.get().evidence == "refund  of\n$40.00"
    assert post_save(client, draft, criterion="next_step", outcome="FAIL", evidence="none").status_code == 200
    assert Label.objects.get(criterion__key="next_step").evidence == "NONE"


def test_tool_arguments_and_results_are_quotable(client, draft):
    assert post_save(client, draft, outcome="PASS", evidence='"duplicate_charge": 40.0').status_code == 200


def test_a_missing_outcome_says_what_to_do(client, draft):
    r = post_save(client, draft, evidence="refund of $40.00")
    assert r.status_code == 422
    assert "Pick an outcome to save this criterion" in r.content.decode()
    assert not Label.objects.exists()


def test_an_overlong_quote_is_refused(client, draft):
    r = post_save(client, draft, outcome="PASS", evidence="x" * 4001)
    assert r.status_code == 422
    assert "Quote at most 4000 characters" in r.content.decode()
    assert not Label.objects.exists()


def test_a_stale_page_for_another_rubric_version_is_refused(client, draft):
    other = make_rubric_version(version="other")
    r = post_save(client, draft, outcome="PASS", evidence="NONE", rubric_version=other.pk)
    assert r.status_code == 409
    assert "Reload the page; nothing was saved." in r.content.decode()
    r = post_save(client, draft, outcome="PASS", evidence="NONE", rubric_version="garbage")
    assert r.status_code == 422
    assert not Label.objects.exists()


def test_without_htmx_a_refused_save_redirects_back_with_the_message(client, draft):
    r = post_save(client, draft, htmx=False, outcome="PASS", evidence="not there at all")
    assert r.status_code == 302 and r["Location"] == page_url(draft)
    page = client.get(page_url(draft)).content.decode()
    assert "This quote is not in the transcript" in page
    assert not Label.objects.exists()
    r = post_save(client, draft, htmx=False, outcome="PASS", evidence="NONE")
    assert r.status_code == 302
    assert Label.objects.count() == 1


def test_pass_without_evidence_is_a_draft_but_cannot_be_submitted(client, draft):
    r = post_save(client, draft, outcome="PASS", evidence="")
    assert r.status_code == 200
    assert "needs a quote or NONE before you submit" in r.content.decode()
    post_save(client, draft, criterion="next_step", outcome="NOT_APPLICABLE", evidence="")
    r = client.post(submit_url(draft), {"rubric_version": draft.rubric_version_id})
    assert r.status_code == 422
    assert "<li>correct_amount: Needs an evidence quote from the transcript" in r.content.decode()
    draft.refresh_from_db()
    assert draft.status == "draft" and draft.submitted_at is None


def test_submitting_with_an_unanswered_criterion_is_refused(client, draft):
    post_save(client, draft, outcome="PASS", evidence="NONE")
    r = client.post(submit_url(draft), {"rubric_version": draft.rubric_version_id})
    assert r.status_code == 422
    assert "<li>next_step: Not answered yet: pick an outcome before you submit.</li>" in r.content.decode()
    draft.refresh_from_db()
    assert draft.status == "draft"


def test_a_double_submit_changes_nothing(client, draft):
    post_save(client, draft, outcome="PASS", evidence="NONE")
    post_save(client, draft, criterion="next_step", outcome="ABSTAIN", evidence="")
    assert client.post(submit_url(draft), {"rubric_version": draft.rubric_version_id}).status_code == 302
    draft.refresh_from_db()
    first = draft.submitted_at
    before = snapshot()
    r = client.post(submit_url(draft), {"rubric_version": draft.rubric_version_id})
    assert r.status_code == 409
    assert "already submitted" in r.content.decode()
    draft.refresh_from_db()
    assert draft.submitted_at == first and snapshot() == before


def test_a_submit_from_a_page_of_another_rubric_version_is_refused(client, draft):
    post_save(client, draft, outcome="PASS", evidence="NONE")
    post_save(client, draft, criterion="next_step", outcome="PASS", evidence="NONE")
    other = make_rubric_version(version="other")
    for bad in ({"rubric_version": other.pk}, {"rubric_version": "x"}, {}):
        r = client.post(submit_url(draft), bad)
        assert r.status_code in (409, 422), bad
        assert "nothing was" in r.content.decode().lower() or "Nothing was" in r.content.decode()
    draft.refresh_from_db()
    assert draft.status == "draft"


def test_someone_elses_annotation_does_not_exist_for_you(client, annotator, annotator2):
    eval_set, rv, (output,) = labeling_setup()
    theirs = annotate_directly(output, rv, annotator2, {"correct_amount": ("FAIL", "NONE")}, submit=False)
    before = snapshot()
    client.force_login(annotator)
    assert client.get(page_url(theirs)).status_code == 404
    r = post_save(client, theirs, outcome="PASS", evidence="NONE")
    assert r.status_code == 404
    assert client.post(submit_url(theirs), {"rubric_version": rv.pk}).status_code == 404
    assert client.get(page_url(Annotation(pk=999999))).status_code == 404
    assert snapshot() == before
    theirs.refresh_from_db()
    assert theirs.status == "draft"


def test_a_save_after_the_slot_went_to_someone_else_says_so(client, draft, annotator2):
    from datetime import timedelta

    from django.utils import timezone

    from labeling.queue import claim_next, current_queue

    Annotation.objects.filter(pk=draft.pk).update(reserved_until=timezone.now() - timedelta(minutes=1))
    taken = claim_next(user=annotator2, queue=current_queue(draft.output.case.eval_set)).annotation
    assert taken.slot == draft.slot
    r = post_save(client, draft, outcome="PASS", evidence="NONE")
    assert r.status_code == 404
    assert "your reservation lapsed and someone else took the slot" in r.content.decode()
    assert not Label.objects.exists()


def test_the_save_and_submit_endpoints_only_take_posts(client, draft):
    assert client.get(save_url(draft)).status_code == 405
    assert client.get(submit_url(draft)).status_code == 405


def test_anonymous_visitors_are_sent_to_log_in(client):
    eval_set, rv, (output,) = labeling_setup()
    client.logout()
    assert client.post(next_url(eval_set)).status_code == 302
    assert not Annotation.objects.exists()


def test_a_save_decides_on_the_annotation_as_it_is_under_the_lock(client, draft):
    # The save reads the annotation once, with its row locked, and validates against that: a submit from another
    # tab since this draft page was loaded counts (a submit racing the save waits for the lock, or the save for it).
    Annotation.objects.filter(pk=draft.pk).update(status=Annotation.Status.SUBMITTED)
    r = post_save(client, draft, outcome="PASS", evidence="")
    assert r.status_code == 422  # a submitted PASS needs a quote: the draft rule would have taken it
    assert "needs an evidence quote" in r.content.decode()
    assert snapshot() == []
    # Negative control: a correction with its quote is a first revision (from a page made on the submitted
    # annotation: a draft page's save would be refused as stale, tests/labeling/test_stale_gold.py).
    r = post_save(client, draft, outcome="PASS", evidence="refund of $40.00", based_on="none")
    assert r.status_code == 200
    assert [(o, e, rev) for _, _, o, e, rev in snapshot()] == [("PASS", "refund of $40.00", 1)]


def test_a_refused_submit_names_every_problem_at_once_and_only_those(client, annotator):
    three = [
        {"key": "correct_amount", "definition": "The amount matches."},
        {"key": "next_step", "definition": "The next step is said."},
        {"key": "tone", "definition": "Polite."},
    ]
    eval_set, rv, _ = labeling_setup(criteria=three)
    client.force_login(annotator)
    client.post(next_url(eval_set))
    draft = Annotation.objects.get()
    post_save(client, draft, outcome="PASS", evidence="")  # answered, but no quote yet
    post_save(client, draft, criterion="tone", outcome="ABSTAIN", evidence="")  # complete: not named
    r = client.post(submit_url(draft), {"rubric_version": draft.rubric_version_id})
    body = r.content.decode()
    assert r.status_code == 422
    # Said where labeling.js says it, in the sticky Submit bar: one line per criterion left, and no other banner.
    message = body.split('id="submit-problems"', 1)[1].split("</div>", 1)[0]
    assert "<li>correct_amount: Needs an evidence quote" in message and "<li>next_step: Not answered yet" in message
    assert "tone" not in message and 'id="submit-error"' not in body
    # Each named criterion says what it still needs; the complete one says nothing of the kind.
    keys = ("correct_amount", "next_step", "tone")
    status = {k: body.split(f'id="status-{k}"', 1)[1].split("</p>", 1)[0] for k in keys}
    assert "Needs an evidence quote" in status["correct_amount"]
    assert "Not answered yet" in status["next_step"]
    assert "before you submit" not in status["tone"]
    draft.refresh_from_db()
    assert draft.status == "draft"
