"""The gate policy: the thresholds a gating criterion must meet, which the lead decides with the mark.

A lead who marks a criterion as gating also sets its policy (minimum pass rate, maximum ERROR rate,
confidence of the Wilson lower bound); it is stored on the GatingMark. Whoever asks the gate (CI over
HTTP, `manage.py gate`) may only tighten it: a higher minimum pass rate, a lower maximum ERROR rate,
a higher confidence. A looser value is refused, never silently raised to the policy, so a pipeline
that believes it gates at 0.8 learns that it does not. Pure: no Django.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

# PROVISIONAL (2026-11-30): the defaults the issue names, offered to the lead when marking and given to
# marks made before the policy was stored. 0.90 is a product decision, not derived from data: "at worst
# 9 in 10 outputs pass this criterion" with 95% confidence. 0.02 follows the background (000): "fail the
# run outright if the error rate passes a few percent, since a degraded judge invalidates every other
# number"; two percent is the strict end of "a few".
DEFAULT_MIN_PASS_RATE = 0.90
DEFAULT_MAX_ERROR_RATE = 0.02
DEFAULT_CONFIDENCE = 0.95

FIELDS = ("min_pass_rate", "max_error_rate", "confidence")

# Which lower bound of the pass rate must reach the minimum (the lead's choice, never the caller's: neither is
# always the stricter one). The audit (issue 22) decides on the candidate's own gold: a random sample of its outputs
# labeled along an audit plan's order (audits/plans.py), its anytime-valid lower bound shown as `audit_lower`.
# It borrows nothing from the calibration, so it holds where the judge's errors moved; while it is undecided, so is
# the gate. New marks decide on it (issue 40: a default that rests on no assumption we cannot check). The corrected
# bound accounts for the judge's own errors measured on the calibration the mark relied on (a judge that misses 20%
# of failures makes a release look better than it is) and assumes those errors hold on the candidate, which its name
# says everywhere; the observed one is the Wilson bound of the judge's verdicts as they are. Marks made before the
# choice existed keep the observed one, and marks made before issue 40 the corrected one: what they were made with.
# Whatever the choice, the gate never passes against the candidate's own gold (calibration/stats/candidate_evidence.py).
CORRECTED_LOWER = "corrected_lower"
WILSON_LOWER = "wilson_lower"
AUDIT = "audit"
DECIDE_ON = {
    CORRECTED_LOWER: "corrected lower bound (assumes the judge's error rates on the calibration set hold here)",
    WILSON_LOWER: "observed (Wilson) lower bound",
    AUDIT: "audit of the candidate (anytime-valid lower bound)",
}
DEFAULT_DECIDE_ON = AUDIT


class PolicyRefused(Exception):
    """A caller asked for a looser gate than the lead's policy; the message says which value and why."""


def _check(name: str, value: object) -> None:
    if name == "confidence":
        if not isinstance(value, int | float) or math.isnan(value) or not 0.0 < value < 1.0:
            raise ValueError(f"confidence must be a number strictly between 0 and 1, got {value!r}")
    elif not isinstance(value, int | float) or math.isnan(value) or not 0.0 <= value <= 1.0:
        raise ValueError(f"{name.replace('_', '-')} must be a number from 0 to 1, got {value!r}")


@dataclass(frozen=True)
class GateThresholds:
    min_pass_rate: float = DEFAULT_MIN_PASS_RATE
    max_error_rate: float = DEFAULT_MAX_ERROR_RATE
    confidence: float = DEFAULT_CONFIDENCE
    decide_on: str = DEFAULT_DECIDE_ON

    def __post_init__(self) -> None:
        for name in FIELDS:
            _check(name, getattr(self, name))
        if self.decide_on not in DECIDE_ON:
            raise ValueError(f"decide-on must be one of {', '.join(DECIDE_ON)}, got {self.decide_on!r}")

    def as_dict(self) -> dict[str, float | str]:
        return {name: getattr(self, name) for name in (*FIELDS, "decide_on")}


@dataclass(frozen=True)
class Tightening:
    """What a caller asked for; None leaves the lead's value."""

    min_pass_rate: float | None = None
    max_error_rate: float | None = None
    confidence: float | None = None

    def __post_init__(self) -> None:
        for name in FIELDS:
            if getattr(self, name) is not None:
                _check(name, getattr(self, name))

    @property
    def is_empty(self) -> bool:
        return all(getattr(self, name) is None for name in FIELDS)

    def applied_to(self, policy: GateThresholds, criterion: str) -> GateThresholds:
        """The thresholds that apply to `criterion`; PolicyRefused if a value asked for is looser."""
        looser = []
        if self.min_pass_rate is not None and self.min_pass_rate < policy.min_pass_rate:
            looser.append(f"min_pass_rate {self.min_pass_rate:g} is below the lead's {policy.min_pass_rate:g}")
        if self.max_error_rate is not None and self.max_error_rate > policy.max_error_rate:
            looser.append(f"max_error_rate {self.max_error_rate:g} is above the lead's {policy.max_error_rate:g}")
        if self.confidence is not None and self.confidence < policy.confidence:
            looser.append(f"confidence {self.confidence:g} is below the lead's {policy.confidence:g}")
        if looser:
            raise PolicyRefused(
                f"{'; '.join(looser)} for {criterion}: a caller may only tighten the gate policy (a higher "
                "min_pass_rate, a lower max_error_rate, a higher confidence); leave a value out to use the lead's"
            )
        return GateThresholds(
            policy.min_pass_rate if self.min_pass_rate is None else self.min_pass_rate,
            policy.max_error_rate if self.max_error_rate is None else self.max_error_rate,
            policy.confidence if self.confidence is None else self.confidence,
            policy.decide_on,
        )

    def describe(self) -> str:
        asked = [f"{name} {getattr(self, name):g}" for name in FIELDS if getattr(self, name) is not None]
        return "the lead's policy" + (f", tightened to {', '.join(asked)}" if asked else "")
