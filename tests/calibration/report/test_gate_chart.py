"""Geometry of the gate result's charts: pure, from the gate's JSON criteria."""

from __future__ import annotations

from calibration.report.svg import (
    ERROR_LEFT,
    ERROR_RIGHT,
    GATE_LEFT,
    GATE_RIGHT,
    deciding_lower,
    gate_rows,
    pass_axis_min,
)


def crit(**kw) -> dict:
    base = {
        "criterion": "correct_amount",
        "pass_rate": 0.95,
        "wilson_lower": 0.88,
        "min_pass_rate": 0.9,
        "error_rate": 0.01,
        "max_error_rate": 0.02,
        "met": False,
    }
    return {**base, **kw}


def test_the_axis_starts_a_tenth_below_the_lowest_bound_or_minimum():
    # lowest of 0.88 and 0.9 is 0.88; minus 0.05 = 0.83, down to the tenth: 0.8.
    assert pass_axis_min([crit()]) == 0.8
    assert pass_axis_min([crit(wilson_lower=0.31)]) == 0.2
    assert pass_axis_min([crit(wilson_lower=0.01, min_pass_rate=0.0)]) == 0.0
    assert pass_axis_min([crit(wilson_lower=0.99, min_pass_rate=0.99)]) == 0.9  # never narrower than 0.9-1.0
    assert pass_axis_min([]) == 0.0


def test_the_row_places_rate_bound_and_minimum_on_one_axis():
    (row,) = gate_rows([crit()])
    # axis 0.8-1.0 over 248 px from x=6: 0.95 -> 6 + 0.75 * 248 = 192; 0.88 -> 6 + 0.4 * 248 = 105.2; 0.9 -> 130.
    assert (row.pass_x, row.lower_x, row.min_x) == (192.0, 105.2, 130.0)
    assert row.below_w == 124.0 and row.min_label == "min 0.9"
    assert row.ticks[0]["x"] == GATE_LEFT and row.ticks[-1]["x"] == GATE_RIGHT
    assert "pass rate 95.0%, Wilson lower bound 88.0%, minimum 90.0%" in row.label and row.label.endswith("not met")


def test_the_error_track_is_twice_the_maximum_long():
    (row,) = gate_rows([crit()])
    span = ERROR_RIGHT - ERROR_LEFT
    assert row.error_max_x == ERROR_LEFT + span / 2 and row.error_w == span / 4  # 0.01 of a 0.04 track
    (over,) = gate_rows([crit(error_rate=0.1)])
    assert over.error_w == span and over.error_max_x == ERROR_LEFT + round(0.02 / 0.1 * span, 1)
    (none,) = gate_rows([crit(error_rate=0.0, max_error_rate=0.0)])
    assert none.error_w == 0 and none.error_max_x == ERROR_LEFT


def test_the_bound_that_decides_is_the_one_the_policy_names():
    assert deciding_lower(crit()) == 0.88
    assert deciding_lower(crit(decide_on="corrected_lower", corrected_lower=0.8)) == 0.8
    # The corrected bound 0.8 also sets the axis: from 0.7, so 0.8 sits a third along: 6 + 248 / 3 = 88.7.
    (row,) = gate_rows([crit(decide_on="corrected_lower", corrected_lower=0.8)])
    assert row.axis_min == 0.7 and row.lower_x == 88.7


def test_a_criterion_without_pass_or_fail_verdicts_has_no_dot():
    (row,) = gate_rows([crit(pass_rate=None, wilson_lower=None, met=False)])
    assert row.pass_x is None and row.lower_x is None and "pass rate n/a" in row.label


def test_the_row_names_the_bound_that_decided_not_always_wilsons():
    # 0.790 Wilson, 0.809 corrected, deciding on the corrected one: the table shows 0.809 and says "corrected".
    (row,) = gate_rows([crit(wilson_lower=0.790, corrected_lower=0.809, decide_on="corrected_lower")])
    assert (row.lower, row.lower_name) == (0.809, "corrected")
    assert "corrected lower bound 80.9%" in row.label
    # Negative control: a policy deciding on Wilson, and a result stored before decide_on existed.
    (row,) = gate_rows([crit(wilson_lower=0.790, corrected_lower=0.809, decide_on="wilson_lower")])
    assert (row.lower, row.lower_name) == (0.790, "Wilson")
    (row,) = gate_rows([crit(wilson_lower=0.790)])
    assert (row.lower, row.lower_name) == (0.790, "Wilson")
