"""Issue 40: the gate never passes against the candidate's own gold.

The issue's situation rebuilt from synthetic data with known truth: a judge calibrated where it caught 22.8% of
failures (57 of 250) and a candidate where it catches 13.0% (27 of 207), every candidate output with gold, its
pass rate 143 / 350 = 0.409 under a minimum of 0.45. The judge's verdicts with the calibration's rates correct
the candidate's pass rate to about 0.87 (lower bound 0.53), so the rule before issue 40 passed it (the negative
control below)."""

from __future__ import annotations

import io
import json

import numpy as np
import pytest
from django.core.management import call_command

from calibration.gate.criterion_bounds import Gating
from calibration.gate.release_gate import evaluate
from calibration.gate.request import EXIT_FAILED, EXIT_UNDECIDED
from calibration.stats.candidate_evidence import NOT_KNOWN_RANDOM, gold_bound
from calibration.stats.policy import GateThresholds, Tightening
from tests.audit_helpers import candidate as audit_candidate
from tests.audit_helpers import gold as give_gold
from tests.audit_helpers import in_order, plan_on
from tests.factories import (
    bulk_calibration,
    bulk_verdicts,
    make_eval_set,
    make_judge,
    make_rubric_version,
    mark_as_gating,
)

KEY = "correct_amount"
# (true_pass, false_pass, false_fail, true_fail): TPR 900 / 1000 = 0.90, TNR 57 / 250 = 0.228 on the calibration.
CALIBRATION = (900, 193, 100, 57)
# On the candidate: 143 gold PASS of which the judge passes 129 (TPR 0.90), 207 gold FAIL of which it catches 27
# (TNR 0.130). Pass rate 143 / 350 = 0.409; the judge passes 309 / 350 = 0.883.
CANDIDATE = (129, 180, 14, 27)
MINIMUM = 0.45


def gate(*extra: str) -> tuple[int, dict]:
    out, err = io.StringIO(), io.StringIO()
    args = ["--eval-set", "rc-1", "--rubric", "refund@1", "--judge", "gpt-judge", "--format", "json", *extra]
    code = 0
    try:
        call_command("gate", *args, stdout=out, stderr=err)
    except SystemExit as exc:
        code = int(exc.code or 0)
    return code, json.loads(out.getvalue())


def faithbench_like(decide_on: str = "corrected_lower"):
    rv, judge = make_rubric_version(name="refund"), make_judge("gpt-judge")
    mark_as_gating(
        rv, judge, [KEY], make_eval_set("cal"), calibration=CALIBRATION, decide_on=decide_on, min_pass_rate=MINIMUM
    )
    return rv, judge, make_eval_set("rc-1")


@pytest.mark.django_db
def test_the_issues_situation_fails_on_the_candidates_own_gold():
    rv, judge, rc = faithbench_like()
    bulk_calibration(rc, rv, judge, {KEY: CANDIDATE})  # gold on every output, and the judge's verdicts
    code, result = gate()
    c = result["criteria"][0]
    # The corrected bound clears the minimum (0.530 here, 0.487 in the issue): it borrows TNR 0.228 where the judge
    # now catches 0.130.
    assert c["corrected_lower"] > MINIMUM
    # The candidate's gold is a census: its pass rate is 143 / 350, below 0.45 with no assumption at all.
    assert c["candidate_gold"]["sample"] == "census" and c["candidate_gold"]["worst_case_upper"] == 143 / 350
    assert code == EXIT_FAILED and result["passed"] is False and not c["met"]
    assert c["refuted_by_gold"].startswith("the candidate's own gold refutes the minimum 0.45: every output has gold")
    assert "0.409 (143 of 350)" in c["refuted_by_gold"] and result["binding_criterion"] == KEY
    # And the transport test, which the overlapping Wilson intervals missed, finds the TNR moved.
    assert c["transport"]["tnr"]["moved"] and c["transport_warning"]


@pytest.mark.django_db
def test_the_rule_before_issue_40_passes_the_same_candidate():
    # Negative control: the decision on the judge's verdicts and the calibration alone (no gold, no transport test:
    # what the gate read before) passes this candidate, so the test above can fail.
    rv, judge, rc = faithbench_like()
    bulk_calibration(rc, rv, judge, {KEY: CANDIDATE})
    passes, n = CANDIDATE[0] + CANDIDATE[1], sum(CANDIDATE)
    verdicts = json_frame(rv.criteria.get(key=KEY).pk, passes, n - passes)
    policy = GateThresholds(min_pass_rate=MINIMUM, decide_on="corrected_lower")
    g = Gating(rv.criteria.get(key=KEY).pk, KEY, policy, "cal", CALIBRATION)
    assert evaluate(verdicts, [g], Tightening(), outputs=n).passed is True


def json_frame(criterion: int, passes: int, fails: int):
    import pandas as pd

    return pd.DataFrame({"criterion": [criterion] * (passes + fails), "judge": ["PASS"] * passes + ["FAIL"] * fails})


@pytest.mark.django_db
def test_a_hundred_gold_outputs_not_known_to_be_random_hold_the_gate_back():
    # Gold on 100 of the 350 (the first ones, as a labeling queue might have reached them): 41 PASS, 59 FAIL. If they
    # were random the pass rate could still be 0.45 or more, so they do not refute the minimum; but the corrected
    # bound claims more than they allow: the gate cannot pass (exit 2) and says why.
    rv, judge, rc = faithbench_like()
    bulk_calibration(rc, rv, judge, {KEY: (37, 53, 4, 6)})  # 41 gold PASS, 59 gold FAIL, TNR 6 / 59
    bulk_verdicts(rc, rv, judge, {KEY: {"PASS": 219, "FAIL": 31}})  # 250 more outputs the judge graded, no gold
    code, result = gate()
    c = result["criteria"][0]
    assert c["candidate_gold"]["sample"] == NOT_KNOWN_RANDOM and c["candidate_gold"]["unknown"] == 250
    assert code == EXIT_UNDECIDED and result["passed"] is None and c["refuted_by_gold"] is None
    assert c["held_back"].startswith("the corrected lower bound")
    assert "the candidate's gold allows if its labeled outputs are a random sample" in c["held_back"]
    assert result["error"].startswith("undecided: correct_amount: the corrected lower bound")


@pytest.mark.django_db
def test_an_audit_order_makes_the_same_gold_a_random_sample_that_refutes():
    # 40 outputs the judge passed; 20 of them gold FAIL. Without a plan nobody knows they are random: held back.
    # Labeled along an audit plan's order they are, and the audit's anytime-valid interval refutes 0.5: failed.
    c = audit_candidate(n=40, min_pass_rate=0.5, decide_on="corrected_lower", calibration=(90, 10, 10, 90))
    plan = plan_on(c, release=20)
    for output in in_order(plan)[:20]:
        give_gold(c, output, "FAIL")
    code, result = gate()
    row = result["criteria"][0]
    assert row["candidate_gold"]["sample"] == "audit order" and row["candidate_gold"]["upper"] < 0.5
    assert code == EXIT_FAILED and row["refuted_by_gold"] and "the audit's random order" in row["refuted_by_gold"]


@pytest.mark.django_db
def test_the_same_gold_without_a_plan_is_held_back_not_failed():
    c = audit_candidate(n=40, min_pass_rate=0.5, decide_on="corrected_lower", calibration=(90, 10, 10, 90))
    for output in c.outputs[:20]:
        give_gold(c, output, "FAIL")
    code, result = gate()
    row = result["criteria"][0]
    assert row["candidate_gold"]["sample"] == NOT_KNOWN_RANDOM and row["candidate_gold"]["worst_case_upper"] == 0.5
    assert code == EXIT_UNDECIDED and row["refuted_by_gold"] is None
    assert row["held_back"].startswith("the candidate's gold would refute the minimum 0.5 if its labeled outputs")


@pytest.mark.slow
def test_the_gate_never_passes_where_the_candidates_gold_refutes_the_minimum_by_simulation():
    # Known truth, 400 random candidates: a judge whose TNR on the candidate moved anywhere from the calibration's,
    # gold on a uniformly random share of the outputs. Wherever that gold refutes the minimum, the gate must not
    # pass; the rule before issue 40 (no gold read) passed in some of those very cases (the negative control).
    rng = np.random.default_rng(40)
    refuted = wrongly_passed_before = 0
    for _ in range(400):
        N, minimum = int(rng.integers(50, 400)), float(rng.uniform(0.3, 0.8))
        truth = rng.random(N) < rng.uniform(0.2, 0.9)
        tnr = rng.uniform(0.05, 0.9)
        says_pass = np.where(truth, rng.random(N) < 0.9, rng.random(N) > tnr)
        labeled = rng.random(N) < rng.uniform(0.1, 1.0)
        passes, fails = int((truth & labeled).sum()), int((~truth & labeled).sum())
        bound = gold_bound(passes=passes, fails=fails, unknown=N - passes - fails, confidence=0.95)
        policy = GateThresholds(min_pass_rate=minimum, decide_on="corrected_lower")
        g = Gating(1, KEY, policy, "cal", CALIBRATION)
        verdicts = json_frame(1, int(says_pass.sum()), N - int(says_pass.sum()))
        now = evaluate(verdicts, [g], Tightening(), outputs=N, gold={1: bound})
        before = evaluate(verdicts, [g], Tightening(), outputs=N)
        if bound.refutes(minimum):
            refuted += 1
            assert not now.passed
            wrongly_passed_before += before.passed
    assert refuted > 50 and wrongly_passed_before > 0  # 74 refuted, 4 of them passed before (seed 40)


@pytest.mark.django_db
def test_over_http_a_held_back_gate_is_a_409_that_carries_the_criteria(client, lead):
    from tests.api_helpers import call, create_token

    rv, judge, rc = faithbench_like()
    bulk_calibration(rc, rv, judge, {KEY: (37, 53, 4, 6)})
    bulk_verdicts(rc, rv, judge, {KEY: {"PASS": 219, "FAIL": 31}})
    token = create_token(client, lead, ["gate"], rv)
    answer = call(client, "POST", "/api/gate", token, {"eval_set": "rc-1", "rubric": "refund@1", "judge": "gpt-judge"})
    body = answer.json()
    assert answer.status_code == 409 and body["passed"] is None
    assert body["error"].startswith("undecided: correct_amount: the corrected lower bound")
    assert body["criteria"][0]["held_back"].startswith("the corrected lower bound") and body["provenance"]
