"""An undecided gate's reason as pages show it after "Cannot decide:": said once."""

from __future__ import annotations

from calibration.models import GateResult


def test_the_answers_own_undecided_is_not_said_twice():
    audit = GateResult(decision=GateResult.Decision.UNDECIDED, reason="undecided: about 95 more labels by the forecast")
    assert audit.undecided_because == "about 95 more labels by the forecast"
    # A reason without the prefix is shown whole (negative control), and only a leading prefix goes.
    plain = GateResult(decision=GateResult.Decision.UNDECIDED, reason="no judge verdicts yet; still undecided: wait")
    assert plain.undecided_because == "no judge verdicts yet; still undecided: wait"
