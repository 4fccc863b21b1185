"""Disputing a gold label from a false-pass / false-fail drilldown: back to adjudication with the reason,
resolved by the next decision with the history kept, counted on the report."""

from __future__ import annotations

import pytest
from django.test import Client
from django.urls import reverse

from labeling.adjudicate import pending_items
from labeling.models import GoldDispute, GoldLabel
from tests.factories import adjudicate, calibration_set, make_eval_set, make_judge, make_output, make_rubric_version

pytestmark = pytest.mark.django_db
REASON = "The reply says $45 but the tool result says $40: the amount is wrong, so gold FAIL is right; no wait, PASS."


@pytest.fixture
def world():
    es, rv, judge = make_eval_set("cal"), make_rubric_version("refund", "1"), make_judge("gpt-judge")
    rows = [
        {"correct_amount": ("FAIL", "FAIL", "PASS"), "next_step": ("PASS", "PASS", "PASS")},  # a false pass
        {"correct_amount": ("PASS", "FAIL", "PASS", "FAIL"), "next_step": ("PASS", "PASS", "FAIL")},  # adjudicated
        {"correct_amount": ("PASS", "FAIL", "PASS")},  # a disagreement: no gold
    ]
    outputs = calibration_set(es, rv, judge, rows)
    return es, rv, judge, outputs


def dispute_url(es, rv, judge, key="correct_amount", cell="false-pass"):
    return reverse("calibration:dispute_gold", args=[es.pk, rv.pk, judge.pk, key, cell])


def drilldown_url(es, rv, judge, key="correct_amount", cell="false-pass"):
    return reverse("calibration:drilldown", args=[es.pk, rv.pk, judge.pk, key, cell])


def test_a_lead_disputes_a_false_pass_and_it_waits_in_adjudication_with_the_reason(client, lead, reviewer, world):
    es, rv, judge, (fp, adjudicated, split) = world
    client.force_login(lead)
    assert "Dispute this gold label" in client.get(drilldown_url(es, rv, judge)).content.decode()
    response = client.post(dispute_url(es, rv, judge), {"output": fp.pk, "reason": REASON}, follow=True)
    assert "back in the adjudication queue" in response.content.decode()
    dispute = GoldDispute.objects.get()
    assert (dispute.disputed_outcome, dispute.disputed_revision, dispute.raised_by) == ("FAIL", 0, lead)
    assert dispute.raised_from == "false passes of judge gpt-judge" and dispute.is_open
    items = {(i.output_id, i.criterion_key): i for i in pending_items(es, rv, reviewer)}
    assert set(items) == {(fp.pk, "correct_amount"), (split.pk, "correct_amount")}
    assert items[(fp.pk, "correct_amount")].dispute_reason == REASON
    assert items[(split.pk, "correct_amount")].dispute_reason == ""
    client.force_login(reviewer)
    queue = client.get(reverse("labeling:adjudication_queue") + f"?eval_set={es.pk}&rubric_version={rv.pk}")
    assert "gold disputed" in queue.content.decode() and "2 waiting" in queue.content.decode()
    criterion = rv.criteria.get(key="correct_amount")
    page = client.get(reverse("labeling:adjudicate", args=[fp.pk, criterion.pk])).content.decode()
    assert 'id="dispute"' in page and "the annotators' majority" in page and "The reply says $45" in page


def test_deciding_again_resolves_the_dispute_and_keeps_the_history(client, lead, reviewer, world):
    es, rv, judge, (fp, adjudicated, _) = world
    criterion = rv.criteria.get(key="correct_amount")
    client.force_login(lead)
    client.post(dispute_url(es, rv, judge), {"output": adjudicated.pk, "reason": REASON})
    assert GoldDispute.objects.get().disputed_revision == 1
    client.force_login(reviewer)
    url = reverse("labeling:adjudicate", args=[adjudicated.pk, criterion.pk])
    response = client.post(url, {"outcome": "PASS", "rationale": "Re-read: the amount matches.", "based_on": 1})
    assert response.status_code == 302
    dispute = GoldDispute.objects.get()
    gold = GoldLabel.objects.get(output=adjudicated, criterion=criterion, is_current=True)
    assert (gold.outcome, gold.revision) == ("PASS", 2)
    assert (dispute.is_open, dispute.resolved_by, dispute.resolution) == (False, reviewer, gold)
    assert GoldLabel.objects.filter(output=adjudicated, criterion=criterion).count() == 2  # revision 1 is kept
    assert not [i for i in pending_items(es, rv, reviewer) if i.output_id == adjudicated.pk]
    # It can be disputed again: the open-dispute rule is about open ones only.
    client.force_login(lead)
    client.post(dispute_url(es, rv, judge, cell="false-fail"), {"output": adjudicated.pk, "reason": "still not sure"})
    assert GoldDispute.objects.filter(resolved_at__isnull=True).count() == 1


def test_the_report_and_the_drilldown_say_how_many_are_disputed(client, lead, world):
    es, rv, judge, (fp, *_rest) = world
    client.force_login(lead)
    client.post(dispute_url(es, rv, judge), {"output": fp.pk, "reason": REASON})
    report = client.get(reverse("calibration:report", args=[es.pk, rv.pk, judge.pk])).content.decode()
    assert "1 gold label disputed" in report and "1 disputed gold label to adjudicate" in report
    drilldown = client.get(drilldown_url(es, rv, judge)).content.decode()
    assert "1 gold label disputed" in drilldown and "data-disputed" in drilldown
    # Two false passes: the disputed one shows its dispute instead of the form, the other keeps the form.
    assert drilldown.count("data-disputed") == 1 and drilldown.count("Dispute this gold label") == 1


@pytest.mark.parametrize(
    ("post", "message"),
    [
        ({"reason": REASON}, "Reload the page: the output is missing."),
        ({"output": "abc", "reason": REASON}, "Reload the page: the output is missing."),
        ({"output": "OUT", "reason": "   "}, "Write why you doubt this gold label"),
        ({"output": "OUT", "reason": "x" * 4001}, "at most 4000 characters"),
        ({"output": "SPLIT", "reason": REASON}, "already waiting in the adjudication queue"),
    ],
)
def test_garbage_and_items_without_gold_get_a_clear_message_and_nothing_is_written(client, lead, world, post, message):
    es, rv, judge, (fp, _, split) = world
    post = {k: {"OUT": fp.pk, "SPLIT": split.pk}.get(v, v) for k, v in post.items()}
    client.force_login(lead)
    response = client.post(dispute_url(es, rv, judge), post, follow=True)
    assert message in response.content.decode()
    assert not GoldDispute.objects.exists()


def test_unknown_ids_cells_and_outputs_of_another_eval_set_are_404(client, lead, world):
    es, rv, judge, (fp, *_rest) = world
    elsewhere = make_output(make_eval_set("other"), case_id="x")
    client.force_login(lead)
    post = {"output": fp.pk, "reason": REASON}
    assert client.post(dispute_url(es, rv, judge, cell="true-pass"), post).status_code == 404
    assert client.post(dispute_url(es, rv, judge, key="nope"), post).status_code == 404
    assert client.post(dispute_url(es, rv, judge), {**post, "output": elsewhere.pk}).status_code == 404
    assert (
        client.post(dispute_url(es, rv, judge, cell="false-pass").replace(str(judge.pk), "99999"), post).status_code
        == 404
    )
    assert not GoldDispute.objects.exists()


def test_a_second_dispute_of_the_same_gold_is_refused_with_the_first_ones_reason(client, lead, reviewer, world):
    es, rv, judge, (fp, *_rest) = world
    client.force_login(lead)
    client.post(dispute_url(es, rv, judge), {"output": fp.pk, "reason": REASON})
    client.force_login(reviewer)
    response = client.post(dispute_url(es, rv, judge), {"output": fp.pk, "reason": "me too"}, follow=True)
    assert "lead already disputed this gold label" in response.content.decode()
    assert GoldDispute.objects.count() == 1


def test_an_item_with_imported_gold_and_one_label_cannot_be_disputed_in_the_app(client, lead, world):
    es, rv, judge, _ = world
    (lonely,) = calibration_set(es, rv, judge, [{"correct_amount": ("FAIL", None, "PASS")}])
    adjudicate(lonely, rv, "correct_amount", "FAIL", lead)
    client.force_login(lead)
    response = client.post(dispute_url(es, rv, judge), {"output": lonely.pk, "reason": REASON}, follow=True)
    assert "does not have two submitted annotations" in response.content.decode()
    assert not GoldDispute.objects.exists()


def test_annotators_and_strangers_cannot_dispute(client, annotator, world):
    es, rv, judge, (fp, *_rest) = world
    post = {"output": fp.pk, "reason": REASON}
    assert client.post(dispute_url(es, rv, judge), post)["Location"].startswith(reverse("login"))
    client.force_login(annotator)
    assert client.post(dispute_url(es, rv, judge), post).status_code == 403
    assert not GoldDispute.objects.exists()


def test_a_reviewer_may_dispute_but_only_with_the_csrf_token(reviewer, world):
    es, rv, judge, (fp, *_rest) = world
    strict = Client(enforce_csrf_checks=True)
    strict.force_login(reviewer)
    assert strict.post(dispute_url(es, rv, judge), {"output": fp.pk, "reason": REASON}).status_code == 403
    assert not GoldDispute.objects.exists()
    lenient = Client()
    lenient.force_login(reviewer)
    assert lenient.post(dispute_url(es, rv, judge), {"output": fp.pk, "reason": REASON}).status_code == 302
    assert GoldDispute.objects.get().raised_by == reviewer


def test_get_is_not_a_way_to_dispute(client, lead, world):
    es, rv, judge, _ = world
    client.force_login(lead)
    assert client.get(dispute_url(es, rv, judge)).status_code == 405
