"""The gate over k gating criteria decided by audits of the candidate (issue 37 item 3): each criterion's PASS side at
alpha, its FAIL side at alpha / k (calibration/stats/audit_shared.py), so that a release meeting every minimum is
failed at most alpha of the time, not k alpha.

The hand-worked candidate: 40 outputs, both criteria gating at a minimum of 0.5 and confidence 0.95 (alpha 0.025 per
side; k = 2, so FAIL at 0.0125). correct_amount's judge passed every output, next_step's failed every one (identical
verdicts: the tests' bets do not depend on the order). correct_amount's gold PASS on the first 20 outputs of the
order reaches 0.5 x 40 by the exact rule at label 20: PASS. next_step's gold on the same 20 outputs is
PFPFFPFFFFFFPFFFFFFF (4 PASS, 16 FAIL: 24 outputs could still pass, so no exact FAIL): its FAIL capital is 50.1
(audit_stats.audit_decision), past 1 / 0.025 = 40 and short of 1 / 0.0125 = 80. One more FAIL (17 of 21) takes it to
92.8, past 80.
"""

from __future__ import annotations

import io
import json

import pytest
from django.core.management import call_command
from django.urls import reverse

from calibration.audits.plans import start_plan
from calibration.gate import candidate_gold
from calibration.models import GateResult
from evals.models import Role, User
from labeling.audit_order import release_next
from tests import factories as make
from tests.audit_helpers import KEY, in_order

pytestmark = pytest.mark.django_db

OTHER = "next_step"
FIRST_20 = "PFPFFPFFFFFFPFFFFFFF"
ARGS = ["--eval-set", "rc-1", "--rubric", "refund@1", "--judge", "gpt-judge", "--format", "json"]


def gate() -> tuple[int, dict, str]:
    out, err = io.StringIO(), io.StringIO()
    try:
        call_command("gate", *ARGS, stdout=out, stderr=err)
        code = 0
    except SystemExit as exc:
        code = int(exc.code or 0)
    return code, json.loads(out.getvalue()), err.getvalue()


def two_audited_criteria():
    """Both default criteria gate on an audit of the candidate; a plan each on the eval set's one order, all 40
    released. Returns the rubric version and the order."""
    lead = make.make_user("lee", Role.LEAD)
    rv = make.make_rubric_version(name="refund")
    judge = make.make_judge("gpt-judge")
    make.mark_as_gating(
        rv, judge, [KEY, OTHER], make.make_eval_set("cal"), by=lead, min_pass_rate=0.5, decide_on="audit"
    )
    eval_set = make.make_eval_set("rc-1")
    make.bulk_verdicts(eval_set, rv, judge, {KEY: {"PASS": 40}, OTHER: {"FAIL": 40}})
    make.open_queue(eval_set, rv, lead)
    plans = [
        start_plan(criterion=rv.criteria.get(key=key), eval_set=eval_set, judge_config=judge, by=lead, seed=7)
        for key in (KEY, OTHER)
    ]
    release_next(order=plans[0].order, k=40)
    return rv, in_order(plans[0])


def label(rv, outputs, other: str, key: str = "") -> None:
    """Both annotators label both criteria of each output: correct_amount PASS (or as `key` says), next_step as
    `other` says."""
    for output, said, own in zip(outputs, other, key or "P" * len(other), strict=True):
        outcomes = {KEY: "PASS" if own == "P" else "FAIL", OTHER: "PASS" if said == "P" else "FAIL"}
        make.annotate(output, rv, make.annotator("amy"), 1, outcomes)
        make.annotate(output, rv, make.annotator("bo"), 2, outcomes)


def test_a_fail_past_1_over_alpha_but_not_k_over_alpha_does_not_fail_the_gate():
    rv, order = two_audited_criteria()
    label(rv, order[:20], FIRST_20)
    code, answer, err = gate()
    assert code == 2 and answer["passed"] is None
    assert (
        "it reads FAIL at 0.025 per side, but the gate of 2 criteria decided by audits reads each FAIL at 0.0125" in err
    )


def test_the_old_rule_fails_the_same_good_release_as_a_negative_control(monkeypatch):
    # The release is good: next_step's gold on the 20 outputs after these is PASS (checked below, where the gate
    # passes on it), 24 of 40 = 0.6 >= 0.5. Read at alpha per side (k taken as 1, the rule before), it fails.
    rv, order = two_audited_criteria()
    label(rv, order[:20], FIRST_20)
    monkeypatch.setattr(candidate_gold, "audit_gate_size", lambda gating, tightening: 1)
    code, answer, _ = gate()
    assert code == 1 and answer["failed_criteria"] == [OTHER]
    row = next(r for r in answer["criteria"] if r["criterion"] == OTHER)
    assert (row["audit_decided"], row["audit_k"], row["audit_alpha_fail"]) == ("FAIL", 1, pytest.approx(0.025))


def test_the_good_release_passes_once_its_gold_is_in():
    rv, order = two_audited_criteria()
    label(rv, order[:36], FIRST_20 + "P" * 16)
    code, answer, err = gate()
    # next_step: 4 + 16 = 20 gold PASS of 40 reach 0.5 x 40 by the exact rule at label 36 (at alpha / 2 as at alpha);
    # its plan's own FAIL at alpha (label 20) is kept there, and the gate does not read it.
    assert code == 0, err
    assert answer["passed"] is True and answer["failed_criteria"] == []


def test_a_fail_past_k_over_alpha_fails_the_gate_and_names_the_criterion(client):
    rv, order = two_audited_criteria()
    label(rv, order[:21], FIRST_20 + "F")
    code, answer, _ = gate()
    assert code == 1 and answer["passed"] is False
    assert answer["failed_criteria"] == [OTHER] and answer["binding_criterion"] == OTHER
    rows = {r["criterion"]: r for r in answer["criteria"]}
    assert (rows[KEY]["met"], rows[KEY]["audit_decided"]) == (True, "PASS")
    assert (rows[OTHER]["met"], rows[OTHER]["audit_decided"]) == (False, "FAIL")
    for row in rows.values():
        assert (row["audit_k"], row["audit_alpha_pass"], row["audit_alpha_fail"]) == (
            2,
            pytest.approx(0.025),
            pytest.approx(0.0125),
        )
    # Its upper bound is the one its FAIL side reads: at alpha / 2 (audit_decision at 0.975: 0.475; 0.45 at 0.95).
    assert rows[OTHER]["audit_upper"] == pytest.approx(0.475)
    assert any("FAIL at 0.0125" in note for note in rows[OTHER]["notes"])
    # The result page says the same: which criterion failed, and each audited criterion's levels.
    client.force_login(User.objects.get(username="lee"))
    body = client.get(reverse("calibration:gate_result", args=[GateResult.objects.get().pk])).content.decode()
    assert "Failed on: <code>next_step</code>." in body
    assert "<code>next_step</code>: PASS at 0.025, FAIL at 0.0125 (k = 2): decided FAIL" in body


def test_a_fail_fails_the_release_while_another_criterion_still_waits():
    # correct_amount's gold alternates PASS and FAIL (11 of 21): undecided at either level. next_step FAILs at
    # alpha / 2 on the same labels, and the release fails on it: the conjunction needs no more of correct_amount.
    rv, order = two_audited_criteria()
    label(rv, order[:21], FIRST_20 + "F", key="PF" * 10 + "P")
    code, answer, _ = gate()
    assert code == 1 and answer["passed"] is False
    assert answer["failed_criteria"] == [OTHER] and answer["binding_criterion"] == OTHER
    rows = {r["criterion"]: r for r in answer["criteria"]}
    assert rows[KEY]["met"] is False and "more labels by the forecast" in rows[KEY]["held_back"]
    assert rows[KEY]["audit_decided"] is None


def test_a_single_audited_criterion_decides_as_before_at_alpha_per_side():
    # The same gold on one gating criterion (k = 1): its FAIL at alpha (capital 50.1 >= 40) fails the gate, as the
    # plan's own decision always did.
    from tests.audit_helpers import candidate, gold, plan_on

    c = candidate(n=40, judge_says="FAIL", decide_on="audit")
    plan = plan_on(c, release=40)
    for output, said in zip(in_order(plan)[:20], FIRST_20, strict=True):
        gold(c, output, "PASS" if said == "P" else "FAIL")
    code, answer, _ = gate()
    assert code == 1 and answer["failed_criteria"] == [KEY]
    row = answer["criteria"][0]
    assert (row["audit_decided"], row["audit_k"]) == ("FAIL", 1)
    assert row["audit_alpha_pass"] == row["audit_alpha_fail"] == pytest.approx(0.025)
    assert row["audit_upper"] == pytest.approx(0.475)  # at alpha, as the plan shows it
