"""An annotator's day without a browser: Next, the labeling page, saving as you go, submitting, correcting."""

from __future__ import annotations

import pytest

from labeling.models import Annotation, Label
from tests.factories import labeling_setup, make_output
from tests.labeling_helpers import next_url, page_url, save_url, submit_url

pytestmark = pytest.mark.django_db


def test_next_reserves_a_slot_and_opens_the_labeling_page(client, annotator):
    eval_set, rv, (output,) = labeling_setup()
    client.force_login(annotator)
    response = client.post(next_url(eval_set))
    annotation = Annotation.objects.get()
    assert response.status_code == 302 and response["Location"] == page_url(annotation)
    assert annotation.annotator == annotator and annotation.slot == 1 and annotation.status == "draft"
    page = client.get(page_url(annotation)).content.decode()
    assert "I was charged twice for order 1234" in page
    assert "lookup_order" in page and "duplicate_charge" in page
    assert "I have issued a refund of $40.00" in page
    assert "Refund $40.00 for the duplicate charge." in page
    assert "<legend>" in page and "<code>correct_amount</code>" in page


def test_a_whole_case_saves_then_submits(client, annotator):
    eval_set, rv, (output,) = labeling_setup()
    client.force_login(annotator)
    client.post(next_url(eval_set))
    annotation = Annotation.objects.get()
    r = client.post(
        save_url(annotation),
        {"criterion": "correct_amount", "outcome": "PASS", "evidence": "refund of $40.00", "rubric_version": rv.pk},
        HTTP_HX_REQUEST="true",
    )
    assert r.status_code == 200, r.content
    assert 'id="criterion-correct_amount"' in r.content.decode()
    r = client.post(
        save_url(annotation),
        {"criterion": "next_step", "outcome": "FAIL", "evidence": "NONE", "rubric_version": rv.pk},
        HTTP_HX_REQUEST="true",
    )
    assert r.status_code == 200
    r = client.post(submit_url(annotation), {"rubric_version": rv.pk})
    assert r.status_code == 302, r.content.decode()
    annotation.refresh_from_db()
    assert annotation.status == "submitted"
    assert Label.objects.count() == 2


def test_the_submitted_message_shows_once_escaped_and_waits_through_an_htmx_save(client, annotator):
    eval_set, rv, (output,) = labeling_setup()
    make_output(eval_set, case_id="case-<b>2</b>")
    client.force_login(annotator)
    client.post(next_url(eval_set))
    first = Annotation.objects.get()
    for key in ("correct_amount", "next_step"):
        data = {"criterion": key, "outcome": "PASS", "evidence": "NONE", "rubric_version": rv.pk}
        client.post(save_url(first), data, HTTP_HX_REQUEST="true")
    assert client.post(submit_url(first), {"rubric_version": rv.pk}).status_code == 302
    following = Annotation.objects.exclude(pk=first.pk).get()
    # An htmx save answers with one criterion's partial: the message is not printed there, so it still waits.
    data = {"criterion": "next_step", "outcome": "PASS", "evidence": "NONE", "rubric_version": rv.pk}
    partial = client.post(save_url(following), data, HTTP_HX_REQUEST="true").content.decode()
    assert "Submitted" not in partial
    page = client.get(page_url(following)).content.decode()
    assert '<li class="msg msg-success">Submitted case-001.</li>' in page
    assert "msg-success" not in client.get(page_url(following)).content.decode()  # shown once
    for key in ("correct_amount", "next_step"):
        client.post(save_url(following), {**data, "criterion": key}, HTTP_HX_REQUEST="true")
    client.post(submit_url(following), {"rubric_version": rv.pk})
    home = client.get("/").content.decode()  # nothing left: Next sends the person home, with both messages
    assert "Submitted case-&lt;b&gt;2&lt;/b&gt;." in home and "<b>2</b>" not in home
    assert "Nothing left for you" in home
