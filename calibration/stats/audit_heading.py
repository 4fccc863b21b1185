"""Which side an audit is heading for before it decides (issue 38, item 5): "heading for PASS", "heading for FAIL"
or "too early to tell", from the labels so far. Pure, no Django.

The rule: the audit's own two tests read at a lower confidence. An audit decides PASS once the PASS test's capital
(its evidence against "the pass rate is at most the minimum", `AuditDecision.evidence_pass`) reaches 2 / (1 -
confidence), 40 at 95%; the heading says PASS once it reaches 2 / (1 - HEADING_CONFIDENCE), 10 at 80%, and the
FAIL side alike, both after the audit's minimum of settled gold. The capital is a test supermartingale under the
null whatever the design (uniform, stratified, jury), so by Ville's inequality a candidate whose pass rate is at or
below the minimum shows "heading for PASS" at any moment of its audit in at most (1 - 0.80) / 2 = 10% of audits
(and "heading for FAIL" on a candidate at or above it likewise), however often the page is read. The heading reads
the capital now, not its best so far, so it can fall back to "too early to tell" when later labels disagree: it
says where the evidence points now, with a stated error rate, and never decides anything (the decision stays the
audit's, at its confidence). When both capitals clear the bar (possible only on an error of one test) the larger
one is the heading.

Why this rule and not the forecast's majority (audit_forecast's p_pass against p_fail): the forecast is as good as
its strata describe the candidate and has no stated error rate; the tests' capitals have one.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from calibration.stats.audit_stats import FAIL, PASS, AuditDecision

HEADING_CONFIDENCE = 0.80
TOO_EARLY = ""


@dataclass(frozen=True)
class Heading:
    side: str  # PASS, FAIL, or TOO_EARLY ("")
    decided: bool  # the audit has decided: side is its decision
    confidence: float  # the heading's confidence: wrong at most (1 - confidence) / 2 of audits, per side
    in_words: str

    def as_dict(self) -> dict[str, object]:
        return {"side": self.side or None, "decided": self.decided, "confidence": self.confidence,
                "in_words": self.in_words}  # fmt: skip


def heading_of(
    *,
    decided: str | None,
    n_gold: int,
    min_gold: int,
    evidence_pass: float,
    evidence_fail: float,
    confidence: float = HEADING_CONFIDENCE,
) -> Heading:
    """The heading from an audit's figures now: its decision (if any), its settled gold, and each test's capital."""
    if not 0 < confidence < 1:
        raise ValueError(f"confidence must be between 0 and 1, got {confidence}")
    if decided in (PASS, FAIL):
        return Heading(decided, True, confidence, f"decided: {decided}")
    if decided:
        raise ValueError(f"decided is PASS, FAIL or nothing, not {decided!r}")
    if min(evidence_pass, evidence_fail) < 0 or math.isnan(evidence_pass) or math.isnan(evidence_fail):
        raise ValueError("the evidence is a capital: a number at least 0")
    if n_gold < min_gold:
        return Heading(TOO_EARLY, False, confidence, f"too early to tell ({n_gold} of {min_gold} gold labels)")
    bar = 2 / round(1 - confidence, 12)  # 1 - 0.8 is 0.19999999999999996 in floating point; the bar is 10
    side = TOO_EARLY
    if max(evidence_pass, evidence_fail) >= bar:
        side = PASS if evidence_pass >= evidence_fail else FAIL
    if side == TOO_EARLY:
        return Heading(TOO_EARLY, False, confidence, "too early to tell")
    return Heading(side, False, confidence, f"heading for {side} (at {confidence:.0%} confidence; not decided yet)")


def heading(decision: AuditDecision, *, confidence: float = HEADING_CONFIDENCE) -> Heading:
    """The heading of an audit from its decision figures (audit_stats.audit_decision, strata_plan.
    stratified_decision, or the jury's: any AuditDecision)."""
    return heading_of(
        decided=decision.decided,
        n_gold=decision.n_gold,
        min_gold=decision.min_gold,
        evidence_pass=decision.evidence_pass,
        evidence_fail=decision.evidence_fail,
        confidence=confidence,
    )
