"""The transport check (issue 22, item 5): where the candidate has gold, the judge's TPR and TNR there beside the
calibration's, with Wilson intervals, and a warning when they do not overlap; in the gate's JSON and on its page
when the gate decides on the corrected bound."""

from __future__ import annotations

import io
import json

import pytest
from django.core.management import call_command
from django.urls import reverse

from calibration.metrics import TRANSPORT_WARNING, transport_check
from calibration.models import GateResult

from .calibration_factories import annotate, annotator, bulk_verdicts, make_judge, mark_as_gating
from .factories import make_eval_set, make_rubric_version

KEY = "correct_amount"
# The calibration the mark relied on: (true_pass, false_pass, false_fail, true_fail) = 90, 20, 10, 80, so
# TPR = 90 / 100 and TNR = 80 / 100.
CALIBRATION = (90, 20, 10, 80)

# 95% Wilson intervals worked by hand, z = 1.959964, z^2 = 3.841459:
#   centre = (p + z^2 / 2n) / (1 + z^2 / n), half = z / (1 + z^2 / n) * sqrt(p (1 - p) / n + z^2 / 4n^2)
#   80 / 100: centre 0.8192073 / 1.0384146 = 0.788902, half 1.887456 * 0.041183 = 0.077731 -> [0.71117, 0.86663]
#   13 / 100: centre 0.1492073 / 1.0384146 = 0.143688, half 1.887456 * 0.035029 = 0.066116 -> [0.07757, 0.20980]
#   75 / 100: centre 0.7692073 / 1.0384146 = 0.740752, half 1.887456 * 0.044396 = 0.083796 -> [0.65696, 0.82455]
#   90 / 100: centre 0.9192073 / 1.0384146 = 0.885203, half 1.887456 * 0.031560 = 0.059568 -> [0.82564, 0.94477]


def test_tnr_that_fell_from_80_to_13_percent_warns_with_hand_worked_intervals():
    # The candidate: 100 gold FAIL of which the judge caught 13 (the 22.8% -> 13.0%, made round), and
    # 100 gold PASS of which it passed 90, as on the calibration.
    check = transport_check(calibration=CALIBRATION, candidate=(90, 87, 10, 13))
    assert check.candidate_n == 200
    assert check.tnr.calibration == 0.8 and check.tnr.candidate == 0.13
    assert check.tnr.calibration_ci == pytest.approx((0.71117, 0.86663), abs=1e-4)
    assert check.tnr.candidate_ci == pytest.approx((0.07757, 0.20980), abs=1e-4)
    assert check.tpr.calibration_ci == check.tpr.candidate_ci == pytest.approx((0.82564, 0.94477), abs=1e-4)
    assert check.tnr.moved and not check.tpr.moved
    assert check.warning == f"{TRANSPORT_WARNING} (TNR)"
    assert TRANSPORT_WARNING.startswith("the judge's errors moved: the corrected bound borrows the calibration's")


def test_overlapping_intervals_give_no_warning():
    # The negative control: TNR 75 / 100 on the candidate, [0.65696, 0.82455], overlaps the calibration's
    # [0.71117, 0.86663] although the point moved by 0.05.
    check = transport_check(calibration=CALIBRATION, candidate=(90, 25, 10, 75))
    assert check.tnr.candidate_ci == pytest.approx((0.65696, 0.82455), abs=1e-4)
    assert not check.tnr.moved and not check.tpr.moved and check.warning is None


def test_a_rate_without_gold_of_its_kind_is_not_compared():
    # No gold FAIL on the candidate: its TNR is undefined, so nothing moved (and nothing is claimed to hold).
    check = transport_check(calibration=CALIBRATION, candidate=(20, 0, 0, 0))
    assert check.tnr.candidate is None and check.tnr.candidate_ci is None and not check.tnr.moved
    assert check.tpr.candidate == 1.0 and check.warning is None


def test_both_rates_moving_are_both_named():
    # TPR 30 / 100 and TNR 13 / 100: both intervals fall below the calibration's.
    check = transport_check(calibration=CALIBRATION, candidate=(30, 87, 70, 13))
    assert check.warning == f"{TRANSPORT_WARNING} (TPR and TNR)"


# -- in the gate ---------------------------------------------------------------------------------------------


def run_gate(fmt: str) -> str:
    out = io.StringIO()
    args = ["--eval-set", "rc-1", "--rubric", "refund@1", "--judge", "gpt-judge", "--format", fmt]
    try:
        call_command("gate", *args, stdout=out)
    except SystemExit:
        pass  # the exit code is the gate's own business (tests/test_gate.py); here, what it says
    return out.getvalue()


def gate_json() -> tuple[int, dict]:
    return 0, json.loads(run_gate("json"))


def candidate(decide_on: str = "corrected_lower"):
    """A candidate of 30 judge PASS and 10 judge FAIL verdicts on correct_amount; the mark's calibration is
    CALIBRATION and its policy decides on `decide_on`."""
    rv = make_rubric_version(name="refund")
    judge = make_judge("gpt-judge")
    mark_as_gating(rv, judge, [KEY], make_eval_set("cal"), calibration=CALIBRATION, decide_on=decide_on)
    outputs = bulk_verdicts(make_eval_set("rc-1"), rv, judge, {KEY: {"PASS": 30, "FAIL": 10}})
    return rv, outputs[:30], outputs[30:]


def give_gold(rv, outputs, outcome: str) -> None:
    for output in outputs:
        annotate(output, rv, annotator("amy"), 1, {KEY: outcome})
        annotate(output, rv, annotator("bo"), 2, {KEY: outcome})


@pytest.mark.django_db
def test_the_gate_warns_when_the_judge_misses_failures_on_the_candidate_it_caught_on_the_calibration():
    rv, judged_pass, judged_fail = candidate()
    give_gold(rv, judged_pass[:15], "FAIL")  # false passes
    give_gold(rv, judged_pass[15:25], "PASS")
    give_gold(rv, judged_fail[:2], "FAIL")
    _, result = gate_json()
    c = result["criteria"][0]
    # By hand: tp 10, fp 15, fn 0, tn 2 -> TNR 2 / 17, TPR 10 / 10; 17 / 17 failures make an interval far below
    # the calibration's [0.711, 0.867].
    assert (c["candidate_gold_n"], c["candidate_tpr"], c["candidate_tnr"]) == (27, 1.0, 2 / 17)
    assert c["candidate_tnr_ci"][1] < 0.5 and c["judge_tnr_ci"] == pytest.approx([0.71117, 0.86663], abs=1e-4)
    assert c["transport_warning"] == f"{TRANSPORT_WARNING} (TNR)"
    assert c["judge_tnr"] == 0.8  # the calibration's rate stays where it was
    text = run_gate("text")
    assert f"warning: correct_amount: {TRANSPORT_WARNING} (TNR) (TNR 0.800 on the calibration, 0.118 on 27" in text


@pytest.mark.django_db
def test_the_gate_does_not_warn_when_the_candidates_rates_agree():
    rv, judged_pass, judged_fail = candidate()
    give_gold(rv, judged_pass[:2], "FAIL")
    give_gold(rv, judged_pass[2:22], "PASS")
    give_gold(rv, judged_fail, "FAIL")
    _, result = gate_json()
    c = result["criteria"][0]
    # By hand: tp 20, fp 2, fn 0, tn 10 -> TNR 10 / 12, TPR 20 / 20: both intervals overlap the calibration's.
    assert (c["candidate_gold_n"], c["candidate_tnr"], c["candidate_tpr"]) == (32, 10 / 12, 1.0)
    assert c["transport_warning"] is None and "warning:" not in run_gate("text")


@pytest.mark.django_db
def test_without_gold_on_the_candidate_the_check_says_zero_and_warns_nothing():
    candidate()
    _, result = gate_json()
    c = result["criteria"][0]
    assert (c["candidate_gold_n"], c["candidate_tpr"], c["candidate_tnr"], c["transport_warning"]) == (
        0,
        None,
        None,
        None,
    )


@pytest.mark.django_db
def test_a_gate_deciding_on_the_observed_bound_leaves_the_check_out():
    rv, judged_pass, _ = candidate(decide_on="wilson_lower")
    give_gold(rv, judged_pass[:15], "FAIL")
    _, result = gate_json()
    c = result["criteria"][0]
    assert all(c[k] is None for k in ("candidate_gold_n", "candidate_tnr", "transport_warning", "judge_tnr_ci"))


@pytest.mark.django_db
def test_the_gate_page_shows_the_rates_side_by_side_and_the_warning(client, lead):
    rv, judged_pass, judged_fail = candidate()
    give_gold(rv, judged_pass[:15], "FAIL")
    give_gold(rv, judged_fail[:2], "FAIL")
    gate_json()
    client.force_login(lead)
    page = client.get(reverse("calibration:gate_result", args=[GateResult.objects.get().pk])).content.decode()
    row = page.split('id="transport-correct_amount"', 1)[1].split("</tr>", 1)[0]
    # TNR first (the false pass is the dangerous cell): 0.800 on the calibration, 2 / 17 = 0.118 on the candidate.
    assert row.index("0.800") < row.index("0.118") and "[0.711, 0.867]" in row
    assert 'id="transport-warning-correct_amount"' in page and "the judge&#x27;s errors moved" in page
