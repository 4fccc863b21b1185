"""What a caller asks the gate (`GateRequest`: names as typed, and how it tightens the lead's policy), the three
ways the gate answers as exit codes, and `CannotDecide`, the answer when there is nothing it may decide on.

The command line, the HTTP API and the gate page all ask through `release_gate.gate_and_record`.
"""

from __future__ import annotations

from dataclasses import dataclass

from calibration.stats.policy import Tightening

EXIT_PASSED, EXIT_FAILED, EXIT_UNDECIDED = 0, 1, 2


class CannotDecide(Exception):
    """The gate has nothing it may decide on; the message says why and what to do."""


@dataclass(frozen=True)
class GateRequest:
    eval_set: str
    rubric: str
    judge: str
    agent_version: str | None
    tightening: Tightening
