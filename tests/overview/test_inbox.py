"""Home is an inbox per role: an annotator's queues, what waits for a reviewer, what waits for a lead's decision."""

from __future__ import annotations

import re
from datetime import timedelta

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.urls import reverse
from django.utils import timezone

from calibration.models import GateResult, GatingMark
from judging.models import JudgeRun
from labeling.disputes import raise_dispute
from labeling.queue import move_queue
from overview.lead_inbox import lead_inbox
from overview.review_inbox import adjudications_waiting
from tests.factories import (
    annotate,
    annotator,
    bulk_calibration,
    default_workspace,
    make_eval_set,
    make_judge,
    make_output,
    make_rubric_version,
    mark_as_gating,
)

pytestmark = pytest.mark.django_db
HOME = reverse("home")


def section(body: str, kind: str) -> str:
    match = re.search(rf'<ul class="inbox" data-kind="{kind}">(.*?)</ul>', body, re.S)
    return " ".join(match.group(1).split()) if match else ""


@pytest.fixture
def calibrated(lead):
    """A calibration set with a finished run, the rubric version approved and one criterion gating."""
    es, rv, judge = make_eval_set("cal"), make_rubric_version("refund", "1"), make_judge("gpt-judge")
    bulk_calibration(es, rv, judge, {"correct_amount": (145, 15, 5, 35), "next_step": (60, 20, 10, 30)})
    JudgeRun.objects.update(finished_at=timezone.now() - timedelta(hours=1))
    move_queue(eval_set=es, rubric_version=rv, by=lead)
    mark_as_gating(rv, judge, ["correct_amount"], es, by=lead)
    return es, rv, judge


def test_an_annotator_sees_only_their_queues(client, annotator, calibrated):
    make_output(calibrated[0], case_id="fresh")
    client.force_login(annotator)
    body = client.get(HOME).content.decode()
    assert "Your next step" in body and ">Next</button>" in body
    assert 'id="decisions"' not in body and 'id="adjudications"' not in body


def test_a_reviewer_sees_adjudications_and_disputes_waiting_with_the_oldest_first(client, reviewer, lead, calibrated):
    es, rv, judge = calibrated
    older, newer = make_output(es, case_id="older"), make_output(es, case_id="newer")
    for output in (older, newer):
        annotate(output, rv, annotator("amy"), 1, {"next_step": "PASS"})
        annotate(output, rv, annotator("bo"), 2, {"next_step": "FAIL"})
    from labeling.models import Annotation

    Annotation.objects.filter(output=older).update(submitted_at=timezone.now() - timedelta(days=3))
    agreed = make_output(es, case_id="agreed")
    annotate(agreed, rv, annotator("amy"), 1, {"next_step": "PASS"})
    annotate(agreed, rv, annotator("bo"), 2, {"next_step": "PASS"})
    raise_dispute(output=agreed, criterion=rv.criteria.get(key="next_step"), by=lead, reason="reads like a FAIL")
    (waiting,) = adjudications_waiting(reviewer, default_workspace())
    assert (waiting.waiting, waiting.disputes, waiting.disagreements) == (3, 1, 2)
    next_step = rv.criteria.get(key="next_step")
    assert waiting.oldest_url == reverse("labeling:adjudicate", args=[older.pk, next_step.pk])
    client.force_login(reviewer)
    client.get(HOME)
    with CaptureQueriesContext(connection) as queries:
        body = client.get(HOME).content.decode()
    # Session and user, scopes (queues, disputes), per scope: item states (3: labels, gold, the criteria's gold
    # policies), disputes, own outputs, the items' labels, criteria and audit positions, when they started
    # waiting (2); the open audit plans (1; two when one is open); the staff tables (3); the person's workspace
    # memberships (1, every signed-in request since #36).
    assert len(queries) <= 20, [q["sql"][:90] for q in queries]
    assert "2 disagreements" in body and "1 gold dispute" in body and "has waited 3" in body
    assert waiting.oldest_url in body and 'id="decisions"' not in body


def test_a_reviewer_with_nothing_to_adjudicate_is_told_so(client, reviewer, calibrated):
    client.force_login(reviewer)
    assert "Nothing waits for you to adjudicate." in client.get(HOME).content.decode()


def test_a_lead_sees_each_kind_of_decision_with_a_link_to_where_it_is_made(client, lead, calibrated):
    es, rv, judge = calibrated
    draft = make_rubric_version("refund", "2")  # a draft, and newer than the gating version: the mark goes stale
    idle = make_eval_set("idle")  # nobody labels it
    rc = make_eval_set("rc-1")  # a release candidate: gated, never labeled
    GateResult.objects.create(
        workspace=default_workspace(),
        decision="failed",
        source="cli",
        eval_set=rc,
        eval_set_name="rc-1",
        rubric_ref=rv.ref,
        judge_name="gpt-judge",
        binding_criterion="correct_amount",
    )
    old = GateResult.objects.create(
        workspace=default_workspace(),
        decision="failed",
        source="cli",
        eval_set_name="rc-0",
        rubric_ref=rv.ref,
        judge_name="gpt-judge",
    )
    GateResult.objects.filter(pk=old.pk).update(created_at=timezone.now() - timedelta(days=8))
    other = make_judge("claude-judge")
    bulk_calibration(es, rv, other, {"correct_amount": (100, 10, 10, 80)})
    JudgeRun.objects.filter(judge_config=other).update(finished_at=timezone.now())
    client.force_login(lead)
    body = client.get(HOME).content.decode()
    drafts = section(body, "draft")
    assert "refund@2 is a draft" in drafts and reverse("labeling:rubric_version", args=[draft.pk]) in drafts
    no_queue = section(body, "no_queue")
    assert (
        f"{reverse('labeling:queues')}#queue-{idle.pk}" in no_queue
        and "rc-1" not in no_queue
        and "cal " not in no_queue
    )
    uncalibrated = section(body, "uncalibrated")
    # gpt-judge was decided on (its mark came after the run finished); claude-judge was not.
    assert "claude-judge" in uncalibrated and "gpt-judge" not in uncalibrated
    assert reverse("calibration:report", args=[es.pk, rv.pk, other.pk]) in uncalibrated
    stale = section(body, "stale")
    assert "correct_amount gates with gpt-judge on refund@1, but refund@2 is newer" in stale
    failures = section(body, "gate_failed")
    recent = GateResult.objects.get(eval_set_name="rc-1")
    assert reverse("calibration:gate_result", args=[recent.pk]) in failures and "(binding: correct_amount)" in failures
    assert "rc-0" not in failures  # more than a week ago


def test_a_tier_that_changed_since_the_mark_is_a_decision_waiting(client, lead, calibrated):
    es, rv, judge = calibrated
    mark_as_gating(rv, judge, ["next_step"], es, by=lead)  # marked as gate; kappa 0.47 on its report: trend
    sections = {s.kind: s for s in lead_inbox(default_workspace())}
    (line,) = sections["tier_changed"].lines
    assert line.text == "next_step gates with gpt-judge on refund@1: marked in the gate tier, now trend on cal"
    assert line.url.endswith("#criterion-next_step")
    GatingMark.objects.filter(criterion__key="next_step").update(tier="trend")
    assert "tier_changed" not in {
        s.kind for s in lead_inbox(default_workspace())
    }  # negative control: same tier, nothing waits


def test_a_changed_judge_config_makes_its_marks_stale(lead, calibrated):
    es, rv, judge = calibrated
    GatingMark.objects.update(judge_config_hash="0" * 64)
    (line,) = {s.kind: s for s in lead_inbox(default_workspace())}["stale"].lines
    assert "judge config gpt-judge changed since it was marked" in line.text


def test_a_lead_with_nothing_waiting_is_told_so(client, lead):
    client.force_login(lead)
    assert "Nothing waits for a decision" in client.get(HOME).content.decode()


def test_the_lead_home_costs_a_bounded_number_of_queries(client, lead, calibrated):
    es, rv, judge = calibrated
    client.force_login(lead)
    client.get(HOME)
    with CaptureQueriesContext(connection) as small:
        assert client.get(HOME).status_code == 200
    for i in range(4):
        make_eval_set(f"idle-{i}")
        make_rubric_version("refund", f"draft-{i}")
        GateResult.objects.create(
            workspace=default_workspace(),
            decision="failed",
            source="cli",
            eval_set_name="rc",
            rubric_ref=rv.ref,
            judge_name="j",
        )
    bulk_calibration(es, rv, judge, {"correct_amount": (100, 10, 10, 80)})
    with CaptureQueriesContext(connection) as large:
        assert client.get(HOME).status_code == 200
    assert len(large) == len(small), [q["sql"][:90] for q in large]
    # Session and user; the reviewer's part (queues, disputes, item states, open disputes); one query per kind
    # of decision (the audit plans' one included: none is open), one report (six, and one for whether a worker
    # stores it: issue 37) for the tier check; the staff tables. Each audit plan shown adds six
    # (tests/overview/test_inbox_audits.py).
    assert len(large) <= 25, [q["sql"][:90] for q in large]
