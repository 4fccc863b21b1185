"""Drafts survive a reload and update in place; after Submit a correction is a new revision, never an overwrite."""

from __future__ import annotations

import pytest

from labeling.models import Annotation, Label
from tests.factories import labeling_setup
from tests.labeling_helpers import next_url, page_url, save_url, submit_url

pytestmark = pytest.mark.django_db


@pytest.fixture
def draft(client, annotator):
    eval_set, rv, (output,) = labeling_setup()
    client.force_login(annotator)
    client.post(next_url(eval_set))
    return Annotation.objects.get()


def save(client, annotation, key, outcome, evidence="NONE"):
    data = {"criterion": key, "outcome": outcome, "evidence": evidence, "rubric_version": annotation.rubric_version_id}
    data["based_on"] = fresh_base(annotation, key)
    return client.post(save_url(annotation), data, HTTP_HX_REQUEST="true")


def fresh_base(annotation, key) -> str:
    """What a page loaded just now posts as `based_on` (stale pages: tests/labeling/test_stale_gold.py)."""
    annotation.refresh_from_db()
    if annotation.status == Annotation.Status.DRAFT:
        return "draft"
    current = Label.objects.filter(annotation=annotation, criterion__key=key, is_current=True).first()
    return str(current.revision) if current else "none"


def test_a_draft_survives_a_reload(client, draft):
    save(client, draft, "correct_amount", "FAIL", "refund of $40.00")
    page = client.get(page_url(draft)).content.decode()
    assert 'id="o-correct_amount-FAIL" name="outcome" value="FAIL" checked' in page
    assert ">refund of $40.00</textarea>" in page
    assert "1</span>/2 answered" in page


def test_draft_saves_update_the_current_label_in_place(client, draft):
    save(client, draft, "correct_amount", "PASS")
    save(client, draft, "correct_amount", "FAIL", "refund of $40.00")
    label = Label.objects.get()
    assert (label.outcome, label.evidence, label.revision, label.is_current) == ("FAIL", "refund of $40.00", 1, True)


def submit_all(client, annotation):
    save(client, annotation, "correct_amount", "PASS", "refund of $40.00")
    save(client, annotation, "next_step", "PASS", "within 5 business days")
    assert client.post(submit_url(annotation), {"rubric_version": annotation.rubric_version_id}).status_code == 302


def test_submitting_locks_the_page(client, draft):
    submit_all(client, draft)
    page = client.get(page_url(draft)).content.decode()
    assert "<fieldset disabled" in page
    assert "hx-post" not in page
    assert ">Submit</button>" not in page
    assert "Correct an answer" in page


def test_a_correction_after_submitting_is_a_new_revision(client, draft):
    submit_all(client, draft)
    page = client.get(page_url(draft) + "?correct=1").content.decode()
    assert "Save correction" in page and "<fieldset disabled" not in page
    r = save(client, draft, "correct_amount", "FAIL", "refund of $40.00")
    assert r.status_code == 200
    assert "Saved as revision 2" in r.content.decode()
    rows = list(Label.objects.filter(criterion__key="correct_amount").order_by("revision"))
    assert [(x.outcome, x.revision, x.is_current) for x in rows] == [("PASS", 1, False), ("FAIL", 2, True)]
    draft.refresh_from_db()
    assert draft.status == "submitted"


def test_an_unchanged_correction_adds_no_revision(client, draft):
    submit_all(client, draft)
    save(client, draft, "correct_amount", "PASS", "refund of $40.00")
    assert Label.objects.filter(criterion__key="correct_amount").count() == 1


def test_a_refused_correction_keeps_the_current_revision(client, draft):
    submit_all(client, draft)
    r = save(client, draft, "correct_amount", "FAIL", "a quote from nowhere")
    assert r.status_code == 422
    assert list(Label.objects.filter(criterion__key="correct_amount").values_list("outcome", "is_current")) == [
        ("PASS", True)
    ]


def test_submit_opens_the_next_case(client, annotator):
    eval_set, rv, outputs = labeling_setup(n_outputs=2)
    client.force_login(annotator)
    client.post(next_url(eval_set))
    first = Annotation.objects.get()
    save(client, first, "correct_amount", "PASS", "NONE")
    save(client, first, "next_step", "PASS", "NONE")
    r = client.post(submit_url(first), {"rubric_version": rv.pk})
    second = Annotation.objects.exclude(pk=first.pk).get()
    assert r["Location"] == page_url(second)
    assert second.output == outputs[1]
    page = client.get(r["Location"]).content.decode()
    assert f"Submitted {outputs[0].case.case_id}." in page


def test_a_correction_to_pass_or_fail_still_needs_evidence(client, draft):
    submit_all(client, draft)
    r = save(client, draft, "next_step", "FAIL", "")
    assert r.status_code == 422
    assert "needs an evidence quote" in r.content.decode()
    assert list(Label.objects.filter(criterion__key="next_step").values_list("outcome", "revision")) == [("PASS", 1)]
    assert save(client, draft, "next_step", "NOT_APPLICABLE", "").status_code == 200  # N/A needs none
