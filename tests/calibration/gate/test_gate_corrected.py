"""The gate corrected for the judge's own errors: Rogan-Gladen with the TPR and TNR of the calibration the
mark relied on, checked against the `judgy` package on the same inputs and against simulations whose true
pass rate is known; the lead's policy says which lower bound decides."""

from __future__ import annotations

import io
import json

import numpy as np
import pytest
from django.core.management import call_command
from judgy import estimate_success_rate

from calibration.models import GateResult, GatingMark
from calibration.stats.metrics import wilson_interval
from calibration.stats.pass_rate import corrected_pass_rate, rogan_gladen
from calibration.stats.policy import GateThresholds
from evals.models import Workspace
from evals.workspaces import in_workspace
from tests.factories import (
    bulk_calibration,
    bulk_verdicts,
    make_eval_set,
    make_judge,
    make_rubric_version,
    make_user,
    mark_as_gating,
)
from tests.migration_helpers import migrate_to_latest, old_rubric_version


def judgy_inputs(cells: tuple[int, int, int, int], passes: int, n: int):
    """judgy's arrays for our counts: human labels and judge predictions on the calibration set (1 = PASS),
    and the judge's predictions on the candidate."""
    tp, fp, fn, tn = cells
    labels = [1] * tp + [0] * fp + [1] * fn + [0] * tn
    preds = [1] * tp + [1] * fp + [0] * fn + [0] * tn
    return labels, preds, [1] * passes + [0] * (n - passes)


@pytest.mark.parametrize(
    "cells,passes,n",
    [
        ((180, 20, 5, 95), 400, 500),  # misses 17% of failures
        ((140, 2, 30, 28), 130, 200),  # rarely passes a failure, fails many good outputs
        ((60, 10, 10, 20), 95, 100),  # the correction clips at 1
    ],
)
def test_the_point_estimate_equals_judgys(cells, passes, n):
    ours = corrected_pass_rate(passes, n, cells)
    np.random.seed(0)
    theirs, _, _ = estimate_success_rate(*judgy_inputs(cells, passes, n), bootstrap_iterations=200)
    assert ours.estimate == pytest.approx(theirs, abs=1e-12)
    tp, fp, fn, tn = cells
    assert (ours.tpr, ours.tnr) == (pytest.approx(tp / (tp + fn)), pytest.approx(tn / (tn + fp)))


def test_with_a_candidate_too_large_to_vary_the_interval_is_judgys():
    """judgy resamples only the calibration set; with a candidate of 200,000 outputs the candidate's own
    sampling uncertainty is negligible, so both intervals must agree."""
    cells, passes, n = (180, 20, 5, 95), 160_000, 200_000
    ours = corrected_pass_rate(passes, n, cells)
    np.random.seed(1)
    estimate, low, high = estimate_success_rate(*judgy_inputs(cells, passes, n), bootstrap_iterations=20_000)
    assert ours.estimate == pytest.approx(estimate, abs=1e-12)
    assert ours.lower == pytest.approx(low, abs=0.006) and ours.upper == pytest.approx(high, abs=0.006)


def test_a_small_candidate_widens_the_interval_beyond_judgys():
    cells, passes, n = (180, 20, 5, 95), 40, 50
    ours = corrected_pass_rate(passes, n, cells)
    np.random.seed(2)
    _, low, high = estimate_success_rate(*judgy_inputs(cells, passes, n), bootstrap_iterations=20_000)
    assert ours.lower < low - 0.03 and ours.upper > high + 0.03  # judgy leaves out the candidate's sampling


def simulate(rng, truth: float, tpr: float, tnr: float, cal_pass: int, cal_fail: int, m: int):
    """One calibration set and one candidate from a judge with known TPR and TNR."""
    tp = rng.binomial(cal_pass, tpr)
    tn = rng.binomial(cal_fail, tnr)
    good = rng.binomial(m, truth)
    passes = rng.binomial(good, tpr) + rng.binomial(m - good, 1 - tnr)
    return (tp, cal_fail - tn, cal_pass - tp, tn), passes


@pytest.mark.slow
def test_in_simulations_the_corrected_interval_covers_the_true_pass_rate_and_the_observed_one_does_not():
    # The judge passes 99% of good outputs and catches only 60% of failures: on a candidate whose true
    # pass rate is 0.80 it reports 0.8 * 0.99 + 0.2 * 0.40 = 0.872.
    rng = np.random.default_rng(20261201)
    truth, tpr, tnr = 0.80, 0.99, 0.60
    covered = observed_covered = 0
    estimates = []
    runs = 300
    for i in range(runs):
        cells, passes = simulate(rng, truth, tpr, tnr, cal_pass=210, cal_fail=90, m=400)
        c = corrected_pass_rate(passes, 400, cells, seed=1000 + i)
        estimates.append(c.estimate)
        covered += c.lower <= truth <= c.upper
        w = wilson_interval(passes, 400, 0.95)
        observed_covered += w.lower <= truth <= w.upper
    assert np.mean(estimates) == pytest.approx(truth, abs=0.01)  # unbiased where the observed rate is not
    assert covered / runs >= 0.93  # nominal 95%
    assert observed_covered / runs < 0.05  # negative control: the judge's own pass rate misses the truth


def test_the_corrected_bound_barely_moves_with_the_bootstrap_seed():
    """The bound decides against a threshold, so its Monte Carlo error must be far below a lead's margins.
    A 100-item calibration (the judge catches 20 of 28 failures) and a 100-output candidate: across 30 seeds
    the lower bound's spread is about 0.01 with the 2,000 replicates the kappa intervals use (the negative
    control, enough to flip a decision at the threshold) and about 0.003 with the default."""
    cells, passes, n = (60, 8, 12, 20), 70, 100
    default = [corrected_pass_rate(passes, n, cells, seed=s).lower for s in range(30)]
    few = [corrected_pass_rate(passes, n, cells, replicates=2000, seed=s).lower for s in range(30)]
    assert np.std(default) < 0.005
    assert np.std(few) > 0.007  # negative control: the old B moves the bound by about 0.01


def test_with_a_perfect_calibration_the_corrected_bound_is_the_wilson_bound():
    # A bootstrap of 35 of 35 passes is 35 of 35 every time; the bound must not collapse to 1.
    perfect = (100, 0, 0, 100)
    assert corrected_pass_rate(35, 35, perfect).lower == pytest.approx(wilson_interval(35, 35, 0.95).lower)
    assert corrected_pass_rate(35, 35, perfect).lower >= 0.90 > corrected_pass_rate(34, 34, perfect).lower


def test_the_correction_is_refused_where_it_means_nothing():
    assert rogan_gladen(0.9, 0.5, 0.5) != rogan_gladen(0.9, 0.5, 0.5)  # NaN: a coin has TPR + TNR = 1
    coin = corrected_pass_rate(90, 100, (50, 50, 50, 50))
    assert coin.estimate is None and "no better than chance" in coin.reason
    no_fail = corrected_pass_rate(90, 100, (120, 0, 3, 0))
    assert no_fail.tnr is None and "no gold FAIL item" in no_fail.reason
    assert corrected_pass_rate(0, 0, (10, 1, 1, 10)).observed is None


# --- the gate ---------------------------------------------------------------------------------------


@pytest.fixture
def world():
    cal, rc = make_eval_set("cal"), make_eval_set("rc-1")
    rv = make_rubric_version("refund", "1")
    return cal, rc, rv, make_judge("gpt-judge")


def gate() -> tuple[int, dict]:
    out = io.StringIO()
    try:
        call_command(
            "gate", "--eval-set", "rc-1", "--rubric", "refund@1", "--judge", "gpt-judge", "--format", "json", stdout=out
        )
        code = 0
    except SystemExit as exc:
        code = exc.code
    return code, json.loads(out.getvalue())


# The judge on the calibration: 198 of 200 good outputs passed, 60 of 100 failures caught.
LENIENT = (198, 40, 2, 60)


@pytest.mark.django_db
def test_the_corrected_bound_decides_by_default_and_both_figures_are_reported(world):
    cal, rc, rv, judge = world
    mark_as_gating(
        rv, judge, ["correct_amount"], cal, calibration=LENIENT, decide_on="corrected_lower", min_pass_rate=0.83
    )
    bulk_verdicts(rc, rv, judge, {"correct_amount": {"PASS": 350, "FAIL": 50}})  # observed 0.875
    code, result = gate()
    c = result["criteria"][0]
    assert c["wilson_lower"] > 0.83  # the judge's own pass rate would pass the release ...
    want = corrected_pass_rate(350, 400, LENIENT)
    assert c["corrected_pass_rate"] == pytest.approx((0.875 + 0.6 - 1) / (0.99 + 0.6 - 1))  # 0.805
    assert (c["corrected_lower"], c["corrected_upper"]) == (want.lower, want.upper)
    assert c["corrected_lower"] < 0.83 and code == 1 and result["passed"] is False  # ... the corrected one does not
    assert (c["judge_tpr"], c["judge_tnr"], c["calibration_n"]) == (0.99, 0.6, 300)
    assert c["calibration_eval_set"] == "cal" and c["decide_on"] == "corrected_lower"
    assert GateResult.objects.get().result["criteria"][0]["corrected_lower"] == c["corrected_lower"]


@pytest.mark.django_db
def test_a_lead_who_decides_on_the_observed_bound_gets_it_with_the_corrected_one_beside_it(world):
    cal, rc, rv, judge = world
    mark_as_gating(
        rv, judge, ["correct_amount"], cal, calibration=LENIENT, decide_on="wilson_lower", min_pass_rate=0.83
    )
    bulk_verdicts(rc, rv, judge, {"correct_amount": {"PASS": 350, "FAIL": 50}})
    code, result = gate()
    c = result["criteria"][0]
    assert code == 0 and c["met"] and c["corrected_lower"] < 0.83 < c["wilson_lower"]


@pytest.mark.django_db
def test_a_corrected_policy_without_a_usable_calibration_cannot_decide(world):
    cal, rc, rv, judge = world
    mark_as_gating(rv, judge, ["correct_amount"], cal, calibration=(120, 0, 3, 0), decide_on="corrected_lower")
    bulk_verdicts(rc, rv, judge, {"correct_amount": {"PASS": 40}})
    code, result = gate()
    assert code == 2 and result["passed"] is None
    assert "the calibration has no gold FAIL item" in result["error"] and "calibration on cal" in result["error"]
    assert GateResult.objects.get().decision == GateResult.Decision.UNDECIDED


@pytest.mark.django_db
def test_marking_on_a_real_calibration_stores_the_cells_the_gate_corrects_with(world):
    from calibration.gate.approvals import mark_gating
    from evals.models import Role, RubricVersion

    cal, rc, rv, judge = world
    bulk_calibration(cal, rv, judge, {"correct_amount": (190, 8, 10, 92)})
    lee = make_user("lee", Role.LEAD)
    RubricVersion.objects.filter(pk=rv.pk).update(status="approved")
    rv.refresh_from_db()
    corrected = GateThresholds(decide_on="corrected_lower")  # the default is the audit since issue 40
    mark_gating(
        rubric_version=rv, judge_config=judge, eval_set=cal, keys=["correct_amount"], by=lee, reason="kappa",
        policy=corrected,
    )  # fmt: skip
    mark = GatingMark.objects.get()
    assert mark.decide_on == "corrected_lower"
    assert [mark.figures[k] for k in ("true_pass", "false_pass", "false_fail", "true_fail")] == [190, 8, 10, 92]
    bulk_verdicts(rc, rv, judge, {"correct_amount": {"PASS": 380, "FAIL": 20}})
    _, result = gate()
    c = result["criteria"][0]
    assert c["judge_tpr"] == pytest.approx(0.95) and c["judge_tnr"] == pytest.approx(0.92)
    assert c["corrected_pass_rate"] == pytest.approx((0.95 + 0.92 - 1) / (0.95 + 0.92 - 1))  # 1.0, clipped


@pytest.mark.django_db(transaction=True)
@pytest.mark.slow
def test_marks_made_before_the_choice_keep_the_observed_bound_and_new_ones_get_the_default(migrator):
    before, after = (
        [("calibration", "0007_gate_result_web")],
        [("calibration", "0008_gating_mark_decide_on")],
    )
    old = migrator(before)  # the rows of that time, through its models
    lee = old.get_model("labeling", "User").objects.create(username="lee", role="lead")
    cal = old.get_model("labeling", "EvalSet").objects.create(name="cal")
    judge = old.get_model("judging", "JudgeConfig").objects.create(
        name="gpt-judge", backend="imported", content_hash="j" * 64
    )
    rv = old_rubric_version(old, "refund", "1")
    first, last = rv.criteria.order_by("order").values_list("pk", flat=True)
    old.get_model("calibration", "GatingMark").objects.create(
        rubric_version_id=rv.pk, judge_config_id=judge.pk, criterion_id=first,
        rubric_content_hash="r", judge_config_hash="j", calibration_eval_set_id=cal.pk, tier="gate",
        reason="old", marked_by_id=lee.pk,
    )  # fmt: skip
    new = migrator(after)
    Mark = new.get_model("calibration", "GatingMark")
    marked = Mark.objects.get()
    assert marked.decide_on == "wilson_lower"
    fresh = GatingMark(
        rubric_version_id=rv.pk, judge_config_id=judge.pk, criterion_id=last,
        rubric_content_hash="r", judge_config_hash="j", calibration_eval_set_id=cal.pk, tier="gate",
        reason="new", marked_by_id=lee.pk,
    )  # fmt: skip
    assert fresh.decide_on == "audit"  # the corrected bound until issue 40, the audit of the candidate since
    migrate_to_latest()  # and forward to today: the old mark keeps its bound, in the default workspace
    kept = in_workspace(GatingMark, Workspace.objects.get(slug="default")).get()
    assert (kept.pk, kept.decide_on) == (marked.pk, "wilson_lower")
