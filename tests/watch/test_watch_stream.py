"""Which arrived outputs the watch feeds, and as what (watch/stream.py): pure, no database."""

from __future__ import annotations

from calibration.stats.watch import NOT_APPLICABLE, AuditedOutput, Outputs
from watch.stream import Arrived, ready


def test_outputs_between_audited_ones_are_batched_in_arrival_order():
    rows = [
        Arrived(False, "PASS"),
        Arrived(False, "FAIL"),
        Arrived(True, "PASS", "FAIL"),
        Arrived(False, "unjudged"),
        Arrived(False, "PASS"),
    ]
    observations, taken = ready(rows)
    assert taken == 5
    assert observations == [
        Outputs(passes=1, fails=1, unjudged=0),
        AuditedOutput(verdict=1.0, gold=0.0),
        Outputs(passes=1, fails=0, unjudged=1),
    ]


def test_an_audited_output_whose_gold_is_pending_holds_back_everything_after_it():
    rows = [Arrived(False, "PASS"), Arrived(True, "FAIL", None), Arrived(False, "FAIL"), Arrived(True, "PASS", "PASS")]
    observations, taken = ready(rows)
    assert taken == 1
    assert observations == [Outputs(passes=1, fails=0, unjudged=0)]
    # Negative control: once its gold is settled, the rest follows in order.
    rows[1] = Arrived(True, "FAIL", "FAIL")
    observations, taken = ready(rows)
    assert taken == 4
    assert observations[1:] == [
        AuditedOutput(verdict=0.0, gold=0.0),
        Outputs(passes=0, fails=1, unjudged=0),
        AuditedOutput(verdict=1.0, gold=1.0),
    ]


def test_an_output_still_waiting_for_its_verdict_holds_back_the_rest():
    observations, taken = ready([Arrived(False, "FAIL"), Arrived(False, ""), Arrived(False, "PASS")])
    assert (observations, taken) == ([Outputs(passes=0, fails=1, unjudged=0)], 1)


def test_no_usable_verdict_is_unjudged_never_fail_and_gold_na_and_cant_tell_are_kept_apart():
    observations, taken = ready(
        [Arrived(False, "unjudged"), Arrived(True, "unjudged", "NOT_APPLICABLE"), Arrived(True, "FAIL", "ABSTAIN")]
    )
    assert taken == 3
    assert observations == [
        Outputs(passes=0, fails=0, unjudged=1),
        AuditedOutput(verdict=None, gold=NOT_APPLICABLE),
        AuditedOutput(verdict=0.0, gold=None),
    ]


def test_nothing_ready_takes_nothing():
    assert ready([]) == ([], 0)
    assert ready([Arrived(True, "PASS", None)]) == ([], 0)
