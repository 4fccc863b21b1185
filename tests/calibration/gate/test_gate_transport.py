"""The transport test (issue 22 item 5, made a test by issue 40): where the candidate has gold, the judge's TPR and
TNR there against the calibration's, Fisher's exact test per rate, with its power for the gold at hand; in the gate's
JSON, its text and its page, and a gate deciding on the corrected bound is held back when the rates moved."""

from __future__ import annotations

import io
import json

import pytest
from django.core.management import call_command
from django.urls import reverse

from calibration.models import GateResult
from calibration.stats.candidate_evidence import TRANSPORT_WARNING
from tests.factories import (
    annotate,
    annotator,
    bulk_verdicts,
    make_eval_set,
    make_judge,
    make_rubric_version,
    mark_as_gating,
)

KEY = "correct_amount"
# The calibration the mark relied on: (true_pass, false_pass, false_fail, true_fail) = 90, 20, 10, 80, so
# TPR = 90 / 100 and TNR = 80 / 100.
CALIBRATION = (90, 20, 10, 80)


# -- in the gate ---------------------------------------------------------------------------------------------


def run_gate(fmt: str) -> str:
    out = io.StringIO()
    args = ["--eval-set", "rc-1", "--rubric", "refund@1", "--judge", "gpt-judge", "--format", fmt]
    try:
        call_command("gate", *args, stdout=out)
    except SystemExit:
        pass  # the exit code is the gate's own business (tests/calibration/gate/test_gate.py); here, what it says
    return out.getvalue()


def gate_json() -> tuple[int, dict]:
    return 0, json.loads(run_gate("json"))


def candidate(decide_on: str = "corrected_lower", min_pass_rate: float = 0.5):
    """A candidate of 30 judge PASS and 10 judge FAIL verdicts on correct_amount; the mark's calibration is
    CALIBRATION and its policy decides on `decide_on` at `min_pass_rate`."""
    rv = make_rubric_version(name="refund")
    judge = make_judge("gpt-judge")
    mark_as_gating(
        rv, judge, [KEY], make_eval_set("cal"), calibration=CALIBRATION, decide_on=decide_on,
        min_pass_rate=min_pass_rate,
    )  # fmt: skip
    outputs = bulk_verdicts(make_eval_set("rc-1"), rv, judge, {KEY: {"PASS": 30, "FAIL": 10}})
    return rv, outputs[:30], outputs[30:]


def give_gold(rv, outputs, outcome: str) -> None:
    for output in outputs:
        annotate(output, rv, annotator("amy"), 1, {KEY: outcome})
        annotate(output, rv, annotator("bo"), 2, {KEY: outcome})


def missed_failures(decide_on: str = "corrected_lower"):
    """Gold on 20 judged-PASS outputs: 8 FAIL the judge passed, 12 PASS. TNR 0 of 8 here against 80 of 100 on the
    calibration (Fisher's p: the table's probability alone is C(20, 8) / C(108, 8), under 1e-5); TPR 12 of 12 against
    90 of 100.
    The gold itself allows the minimum 0.5: at most 32 of 40 pass, and 12 of 20 if random."""
    rv, judged_pass, _ = candidate(decide_on)
    give_gold(rv, judged_pass[:8], "FAIL")
    give_gold(rv, judged_pass[8:20], "PASS")
    return rv


@pytest.mark.django_db
def test_a_judge_that_misses_failures_it_caught_on_the_calibration_holds_a_corrected_gate_back():
    missed_failures()
    code, result = gate_json()
    c = result["criteria"][0]
    assert (c["candidate_gold_n"], c["candidate_tpr"], c["candidate_tnr"]) == (20, 1.0, 0.0)
    t = c["transport"]
    assert t["tnr"]["moved"] and not t["tpr"]["moved"] and t["level"] == pytest.approx(0.05)
    assert t["tnr"]["p_value"] < 0.025 < t["tpr"]["p_value"]
    assert c["transport_warning"].startswith(TRANSPORT_WARNING)
    assert "TNR 0.800 on the calibration, 0.000 on 8 gold outputs of the candidate" in c["transport_warning"]
    assert c["judge_tnr"] == 0.8 and c["judge_tnr_ci"] == pytest.approx([0.71117, 0.86663], abs=1e-4)
    # Its corrected bound meets 0.5 but rests on rates the candidate's gold refutes: held back, exit 2.
    assert c["corrected_lower"] >= 0.5 and not c["met"] and c["held_back"].startswith(TRANSPORT_WARNING)
    assert result["passed"] is None and result["error"].startswith("undecided: correct_amount: the judge's errors")
    text = run_gate("text")
    assert text.startswith("CANNOT DECIDE") and "held back: the judge's errors moved" in text
    assert GateResult.objects.filter(decision="undecided").count() == 2  # recorded as such, with its criteria
    assert GateResult.objects.last().result["criteria"][0]["held_back"]


@pytest.mark.django_db
def test_a_gate_on_the_observed_bound_shows_the_test_and_is_not_held_back_by_it():
    # The negative control of the hold: the same candidate decided on the judge's own verdicts passes (its bound
    # borrows nothing from the calibration), and the test still stands in its answer.
    missed_failures(decide_on="wilson_lower")
    _, result = gate_json()
    c = result["criteria"][0]
    assert result["passed"] is True and c["met"] and c["held_back"] is None
    assert c["transport"]["tnr"]["moved"] and c["transport_warning"]


@pytest.mark.django_db
def test_rates_that_agree_give_no_warning_and_say_how_little_that_means():
    rv, judged_pass, judged_fail = candidate()
    give_gold(rv, judged_pass[:2], "FAIL")
    give_gold(rv, judged_pass[2:22], "PASS")
    give_gold(rv, judged_fail, "FAIL")
    _, result = gate_json()
    c = result["criteria"][0]
    # By hand: tp 20, fp 2, fn 0, tn 10 -> TNR 10 / 12 against 80 / 100, TPR 20 / 20 against 90 / 100.
    assert (c["candidate_gold_n"], c["candidate_tnr"], c["candidate_tpr"]) == (32, 10 / 12, 1.0)
    assert c["transport_warning"] is None and not c["transport"]["tnr"]["moved"]
    assert c["transport"]["too_little_gold"].startswith("no warning, but it means little: with 12 gold FAIL outputs")
    assert result["passed"] is True
    text = run_gate("text")
    assert "transport test: no warning, but it means little: with 12 gold FAIL outputs a TNR drop of 0.10" in text


@pytest.mark.django_db
def test_without_gold_on_the_candidate_the_answer_says_the_corrected_bound_is_unchecked():
    candidate()
    _, result = gate_json()
    c = result["criteria"][0]
    assert (c["candidate_gold_n"], c["candidate_tpr"], c["candidate_tnr"], c["transport_warning"]) == (
        0,
        None,
        None,
        None,
    )
    assert c["candidate_gold"] is None
    assert c["corrected_assumes"] == "assumes the judge's error rates on the calibration set hold here"
    assert c["notes"] == [
        "decided on the corrected bound with no gold on the candidate: it assumes the judge's error rates on the "
        "calibration set hold here, unchecked; an audit of the candidate does not rest on it",
    ]
    text = run_gate("text")
    assert (
        "correct_amount: decided on the corrected bound with no gold on the candidate: it assumes the judge's error "
        "rates on the calibration set hold here, unchecked"
    ) in text


@pytest.mark.django_db
def test_the_gate_page_shows_the_test_beside_the_rates_and_the_warning(client, lead):
    missed_failures()
    gate_json()
    client.force_login(lead)
    page = client.get(reverse("calibration:gate_result", args=[GateResult.objects.get().pk])).content.decode()
    assert 'id="gate-reason"' in page and "Cannot decide: correct_amount" in page
    assert "undecided: correct_amount" not in page
    row = page.split('id="transport-correct_amount"', 1)[1].split("</tr>", 1)[0]
    # TNR first (the false pass is the dangerous cell): 0.800 of 100 on the calibration, 0.000 of 8 on the candidate.
    assert row.index("0.800") < row.index("0.000") and "of 100" in row and "of 8" in row
    assert 'id="transport-warning-correct_amount"' in page and "the judge&#x27;s errors moved" in page
    assert "held back" in page and "assumes the judge&#x27;s error rates on the calibration set hold here" in page
