"""A lead records that gating stays as it is after reading a calibration ("nothing gates" where nothing did):
the decision keeps its figures and reason, and the finished run stops waiting on Home."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.urls import reverse
from django.utils import timezone

from calibration.gate.approvals import ApprovalRefused, approve_rubric_version, mark_gating, record_review
from calibration.models import GatingReview
from judging.models import JudgeRun
from overview.lead_inbox import uncalibrated_runs
from tests.factories import bulk_calibration, make_eval_set, make_judge, make_rubric_version, mark_as_gating

pytestmark = pytest.mark.django_db
HTMX = {"HTTP_HX_REQUEST": "true"}


@pytest.fixture
def finished(lead):
    """A labeled calibration set whose judge run finished an hour ago; nothing gates yet."""
    es, rv, judge = make_eval_set("cal"), make_rubric_version("refund", "1"), make_judge("gpt-judge")
    # next_step: 60 true passes, 20 false passes, 10 false fails, 30 true fails: kappa 0.47, not the gate tier.
    bulk_calibration(es, rv, judge, {"correct_amount": (145, 15, 5, 35), "next_step": (60, 20, 10, 30)})
    JudgeRun.objects.update(finished_at=timezone.now() - timedelta(hours=1))
    return es, rv, judge


def url(es, rv, judge, name="calibration:review_gating") -> str:
    return reverse(name, args=[es.pk, rv.pk, judge.pk])


def waiting() -> list[str]:
    return [line.text for line in uncalibrated_runs()]


def test_recording_that_nothing_gates_keeps_the_figures_and_answers_the_finished_run(finished, lead):
    es, rv, judge = finished
    assert len(waiting()) == 1 and "gpt-judge" in waiting()[0]
    review = record_review(rubric_version=rv, judge_config=judge, eval_set=es, by=lead, reason="  kappa too low  ")
    assert (review.summary, review.reason, review.gating) == ("nothing gates", "kappa too low", [])
    figures = {row["criterion"]: row for row in review.figures["criteria"]}
    assert figures["correct_amount"]["n"] == 200 and figures["correct_amount"]["false_pass"] == 15
    # By hand: observed 90/120 = 27/36, chance 2/3 * 7/12 + 1/3 * 5/12 = 19/36, kappa (27 - 19) / (36 - 19) = 8/17.
    assert figures["next_step"]["kappa"] == pytest.approx(8 / 17) and figures["next_step"]["tier"] == "trend"
    assert review.figures["judge_config"] == "gpt-judge" and "computed_at" in review.figures
    assert (review.rubric_content_hash, review.judge_config_hash) == (rv.content_hash, judge.content_hash)
    assert waiting() == []


def test_with_criteria_gating_the_decision_says_which_stay(finished, lead):
    es, rv, judge = finished
    mark_as_gating(rv, judge, ["correct_amount"], es, by=lead)
    GatingReview.objects.all().delete()
    review = record_review(rubric_version=rv, judge_config=judge, eval_set=es, by=lead, reason="next_step too weak")
    assert review.gating == ["correct_amount"] and review.summary == "gating stays: correct_amount"


def test_a_decision_older_than_the_run_or_on_another_eval_set_does_not_answer_it(finished, lead):
    es, rv, judge = finished
    old = record_review(rubric_version=rv, judge_config=judge, eval_set=es, by=lead, reason="before this run")
    GatingReview.objects.filter(pk=old.pk).update(decided_at=timezone.now() - timedelta(hours=2))
    record_review(rubric_version=rv, judge_config=judge, eval_set=make_eval_set("other"), by=lead, reason="elsewhere")
    assert len(waiting()) == 1  # the negative control: neither is a decision on this run


@pytest.mark.parametrize("reason", ["", "   "])
def test_no_reason_or_no_lead_records_nothing(finished, lead, reviewer, reason):
    es, rv, judge = finished
    with pytest.raises(ApprovalRefused, match="a reason is required"):
        record_review(rubric_version=rv, judge_config=judge, eval_set=es, by=lead, reason=reason)
    with pytest.raises(ApprovalRefused, match="not an active lead"):
        record_review(rubric_version=rv, judge_config=judge, eval_set=es, by=reviewer, reason="I think so")
    assert not GatingReview.objects.exists()


def test_a_lead_records_it_on_the_report_page(client, finished, lead):
    es, rv, judge = finished
    client.force_login(lead)
    page = client.get(url(es, rv, judge, "calibration:report")).content.decode()
    assert "Decide that nothing gates" in page and "Record: nothing gates" in page
    response = client.post(url(es, rv, judge), {"review-reason": "unusable on next_step, fine elsewhere"})
    assert response.status_code == 302 and response["Location"] == url(es, rv, judge, "calibration:report")
    page = client.get(response["Location"]).content.decode()
    assert "Recorded for gpt-judge on refund@1: nothing gates." in page
    assert "<strong>nothing gates</strong> · lead, " in page and "unusable on next_step, fine elsewhere" in page
    approve_rubric_version(rubric_version=rv, by=lead, reason="definitions checked")
    mark_gating(rubric_version=rv, judge_config=judge, eval_set=es, keys=["correct_amount"], by=lead, reason="κ 0.71")
    page = client.get(url(es, rv, judge, "calibration:report")).content.decode()
    assert "Keep gating as it is" in page and "Record: gating stays (correct_amount)" in page


def test_over_htmx_the_page_refreshes_and_a_refusal_shows_on_the_panel(client, finished, lead):
    es, rv, judge = finished
    client.force_login(lead)
    response = client.post(url(es, rv, judge), {"review-reason": "nothing here gates"}, **HTMX)
    assert response.status_code == 200 and response["HX-Refresh"] == "true"
    refused = client.post(url(es, rv, judge), {"review-reason": "  "}, **HTMX)
    body = refused.content.decode()
    assert refused.status_code == 200 and body.lstrip().startswith('<section class="card" id="approval-panel">')
    assert "This field is required." in body  # under the review form's reason, where the lead typed
    assert GatingReview.objects.count() == 1


def test_garbage_is_refused_with_a_message_and_nothing_stored(client, finished, lead):
    es, rv, judge = finished
    client.force_login(lead)
    response = client.post(url(es, rv, judge), {"reason": "the field is named review-reason"})
    assert response.status_code == 422 and "This field is required." in response.content.decode()
    assert client.post(url(es, rv, judge), {}).status_code == 422
    assert client.get(url(es, rv, judge)).status_code == 405
    missing = reverse("calibration:review_gating", args=[es.pk, rv.pk, judge.pk + 999])
    assert client.post(missing, {"review-reason": "x"}).status_code == 404
    assert not GatingReview.objects.exists()


def test_only_leads_record_it(client, finished, reviewer, annotator):
    es, rv, judge = finished
    for user in (reviewer, annotator):
        client.force_login(user)
        assert client.post(url(es, rv, judge), {"review-reason": "me too"}).status_code == 403
    client.logout()
    assert client.post(url(es, rv, judge), {"review-reason": "anyone"}).status_code == 302  # to the login page
    assert not GatingReview.objects.exists()


def test_home_stops_listing_the_run_once_decided(client, finished, lead):
    es, rv, judge = finished
    client.force_login(lead)
    assert "no gating decision since" in client.get(reverse("home")).content.decode()
    client.post(url(es, rv, judge), {"review-reason": "judge unusable here"})
    assert "no gating decision since" not in client.get(reverse("home")).content.decode()


def test_each_reason_box_on_the_panel_has_its_own_label(client, finished, lead):
    """The mark's reason and this decision's reason sit on one panel; a screen reader tells them apart."""
    import re

    es, rv, judge = finished
    approve_rubric_version(rubric_version=rv, by=lead, reason="definitions checked")  # the mark's form shows too
    client.force_login(lead)
    page = client.get(url(es, rv, judge, "calibration:report")).content.decode()
    labels = re.findall(r'<label for="id_(?:review-)?reason">([^<]+)</label>', page)
    assert labels == ["Reason", "Why should nothing gate?"]


# --- The command line: approve --keep-gating ------------------------------------------------------------------


def approve(*args: str) -> str:
    import io

    from django.core.management import call_command

    out = io.StringIO()
    call_command("approve", *args, stdout=out)
    return out.getvalue()


SCOPE = ("--rubric", "refund@1", "--judge", "gpt-judge", "--eval-set", "cal")


def test_the_command_records_that_nothing_gates(finished, lead):
    out = approve(*SCOPE, "--keep-gating", "--by", "lead", "--reason", "judge unusable on next_step")
    assert out.strip() == "recorded: nothing gates with gpt-judge on refund@1 (calibration on cal, by lead)"
    review = GatingReview.objects.get()
    assert (review.reason, review.gating, review.calibration_agent_version) == ("judge unusable on next_step", [], "")
    assert waiting() == []


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (("--keep-gating", "--gating", "correct_amount"), "--keep-gating and --gating exclude each other"),
        (("--keep-gating", "--override"), "--override only applies to --gating"),
        (("--keep-gating", "--min-pass-rate", "0.95"), "only apply to --gating"),
    ],
)
def test_the_command_refuses_flags_that_do_not_go_with_keep_gating(finished, lead, args, message):
    from django.core.management import CommandError

    with pytest.raises(CommandError, match=message):
        approve(*SCOPE, *args, "--by", "lead", "--reason", "because")
    with pytest.raises(CommandError, match="go together"):
        approve("--rubric", "refund@1", "--keep-gating", "--by", "lead", "--reason", "no judge named")
    with pytest.raises(CommandError, match="a reason is required"):
        approve(*SCOPE, "--keep-gating", "--by", "lead", "--reason", "  ")
    with pytest.raises(CommandError, match=r"unknown eval set 'nope' \(known: cal\)"):
        approve(*SCOPE[:-1], "nope", "--keep-gating", "--by", "lead", "--reason", "x")
    assert not GatingReview.objects.exists()
