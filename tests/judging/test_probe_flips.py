"""Flip rates, worked by hand: pairs in, counts, Wilson intervals and warnings out. No database."""

from __future__ import annotations

import pytest

from calibration.stats.metrics import wilson_interval
from judging.probes import flips
from judging.probes.flips import MAX_FLIP_RATE, MIN_DETECTION_RATE, compare, rate
from judging.probes.registry import MEANINGFUL, NEUTRAL, ORIGINAL
from judging.probes.results import build_criteria, verdict_table

P, F, E, NA, AB = "PASS", "FAIL", "ERROR", "NOT_APPLICABLE", "ABSTAIN"


def test_each_direction_is_counted_over_its_own_originals():
    pairs = [(P, P)] * 7 + [(P, F)] * 3 + [(F, F)] * 4 + [(F, P)] * 1
    cell = compare(pairs, probe="padding", version=1, role=NEUTRAL)
    assert (cell.pass_to_fail.count, cell.pass_to_fail.n) == (3, 10)
    assert (cell.fail_to_pass.count, cell.fail_to_pass.n) == (1, 5)
    assert cell.pass_to_fail.rate == pytest.approx(0.3) and cell.fail_to_pass.rate == pytest.approx(0.2)
    assert cell.pairs == 15 and cell.errors == 0 and cell.other == 0


def test_error_on_either_side_is_never_a_flip_and_other_outcomes_are_kept_apart():
    pairs = [(P, E), (E, F), (F, E), (E, E), (P, NA), (AB, F), (NA, P), (P, P), (F, F)]
    cell = compare(pairs, probe="injection", version=1, role=NEUTRAL)
    assert cell.errors == 4 and cell.other == 3 and cell.pairs == 9
    assert (cell.pass_to_fail.count, cell.pass_to_fail.n, cell.fail_to_pass.count, cell.fail_to_pass.n) == (0, 1, 0, 1)
    assert cell.warnings == ()


def test_the_interval_is_wilsons():
    # By hand, z = 1.96: 2 of 10 -> centre (0.2 + 0.1921) / 1.3842 = 0.2833, half 0.2266 -> [0.0567, 0.5098].
    r = rate(2, 10)
    assert r.ci == pytest.approx((0.0567, 0.5098), abs=5e-4)
    # And the calibration report's own implementation agrees on a spread of cases.
    for k, n in [(0, 1), (0, 5), (1, 10), (5, 40), (39, 40), (40, 40)]:
        ours, theirs = rate(k, n), wilson_interval(k, n, 0.95)
        assert ours.ci == pytest.approx((theirs.lower, theirs.upper), abs=1e-9)
    assert rate(0, 0) == flips.Rate(0, 0, None, None)
    with pytest.raises(ValueError):
        rate(3, 2)


def test_a_neutral_probe_warns_only_when_the_lower_end_clears_the_threshold():
    assert MAX_FLIP_RATE == 0.05
    # 1 of 10 FAIL->PASS: lower end 0.018, no warning; 2 of 10: 0.057, fooled.
    quiet = compare([(F, P)] + [(F, F)] * 9, probe="padding", version=1, role=NEUTRAL)
    loud = compare([(F, P)] * 2 + [(F, F)] * 8, probe="padding", version=1, role=NEUTRAL, summary="filler")
    assert quiet.warnings == ()
    assert [w.code for w in loud.warnings] == ["fooled_by_padding"]
    assert "turned FAIL into PASS in 2 of 10" in loud.warnings[0].message and "filler" in loud.warnings[0].message
    # The other direction has its own name: 5 of 40 PASS->FAIL (lower end 0.055) is penalized, 4 of 40 is not.
    penalized = compare([(P, F)] * 5 + [(P, P)] * 35, probe="formatting", version=1, role=NEUTRAL)
    assert [w.code for w in penalized.warnings] == ["penalized_by_formatting"]
    assert compare([(P, F)] * 4 + [(P, P)] * 36, probe="formatting", version=1, role=NEUTRAL).warnings == ()


def test_a_control_warns_when_the_upper_end_stays_below_the_detection_rate():
    assert MIN_DETECTION_RATE == 0.8
    blind = compare([(P, P)] * 5, probe="wrong_amount", version=1, role=MEANINGFUL)  # upper end 0.434
    assert [w.code for w in blind.warnings] == ["blind_to_wrong_amount"]
    assert blind.detection.count == 0 and blind.detection.n == 5
    unsure = compare([(P, F)] * 3 + [(P, P)] * 2, probe="wrong_amount", version=1, role=MEANINGFUL)  # upper 0.882
    assert unsure.warnings == ()
    # A control's flips are what it is for: no "fooled" or "penalized" warning, however many.
    caught = compare([(P, F)] * 10 + [(F, P)] * 10, probe="wrong_amount", version=1, role=MEANINGFUL)
    assert caught.warnings == () and caught.detection.rate == 1.0
    # Originals that already failed cannot show the planted flaw: a control with none passing says nothing.
    assert compare([(F, F)] * 6, probe="wrong_amount", version=1, role=MEANINGFUL).warnings == ()
    neutral = compare([(P, P)] * 5, probe="padding", version=1, role=NEUTRAL)
    assert neutral.detection is None


def test_a_role_must_be_neutral_or_meaningful():
    with pytest.raises(ValueError, match="role must be"):
        compare([], probe="x", version=1, role="decorative")


PLAN = [
    {"name": "padding", "version": 1, "summary": "filler", NEUTRAL: ["amount", "substance"], MEANINGFUL: []},
    {"name": "wrong_amount", "version": 1, "summary": "a wrong amount", NEUTRAL: [], MEANINGFUL: ["amount"]},
]


def test_results_pair_each_probed_verdict_with_the_original_of_the_same_output():
    samples = {
        # Output 1 has two samples of the original that disagree with a third: the majority (PASS) counts.
        (ORIGINAL, 1, "amount"): [P, P, F],
        (ORIGINAL, 2, "amount"): [P],
        (ORIGINAL, 3, "amount"): [F],
        ("padding", 1, "amount"): [P],
        ("padding", 2, "amount"): [P],
        ("padding", 3, "amount"): [P],  # FAIL -> PASS
        ("padding", 9, "amount"): [F],  # no original verdict: not a pair
        ("wrong_amount", 1, "amount"): [F],
        ("wrong_amount", 2, "amount"): [P],  # a planted flaw the judge missed
        (ORIGINAL, 1, "substance"): [F],
        ("padding", 1, "substance"): [P],
        ("wrong_amount", 1, "substance"): [F],  # no role on substance: not measured
    }
    amount, substance = build_criteria(PLAN, ["amount", "substance"], verdict_table(samples))
    padding, control = amount.cells
    assert (padding.probe, padding.pairs, padding.fail_to_pass.count, padding.fail_to_pass.n) == ("padding", 3, 1, 1)
    assert (padding.pass_to_fail.count, padding.pass_to_fail.n) == (0, 2)
    assert (control.role, control.detection.count, control.detection.n) == (MEANINGFUL, 1, 2)
    assert [c.probe for c in substance.cells] == ["padding"]
    assert [n.code for n in substance.notes] == ["no_control"] and amount.notes == ()
