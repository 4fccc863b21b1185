"""The gate's answer: the decision (`GateDecision`: the criteria, the binding one, where the verdicts came from; its
exit code and its JSON), the outcome a caller shows (`GateOutcome`, with the stored GateResult), the JSON when it
cannot decide, and the text `manage.py gate` prints.
"""

from __future__ import annotations

from dataclasses import dataclass

from calibration.gate.criterion_bounds import GateCriterion, evidence_lines
from calibration.gate.request import EXIT_FAILED, EXIT_PASSED, EXIT_UNDECIDED
from calibration.gate.verdict_sources import VerdictSource
from calibration.models import GateResult
from calibration.stats.candidate_evidence import ASSUMES_CALIBRATION
from calibration.stats.metrics import fmt
from calibration.stats.policy import AUDIT, CORRECTED_LOWER, Tightening


@dataclass(frozen=True)
class GateDecision:
    passed: bool
    binding_criterion: str | None
    criteria: tuple[GateCriterion, ...]
    tightening: Tightening
    provenance: tuple[VerdictSource, ...] = ()  # where the verdicts came from (run_gate fills it in)

    @property
    def met_count(self) -> int:
        return sum(c.met for c in self.criteria)

    @property
    def gating_count(self) -> int:
        return len(self.criteria)

    @property
    def held(self) -> tuple[str, ...]:
        """Why the gate may not pass though no criterion failed: each held criterion's reason."""
        return tuple(f"{c.criterion}: {c.held}" for c in self.criteria if c.held)

    @property
    def failed_criteria(self) -> tuple[str, ...]:
        """The criteria that failed the release (not met, not held back), in rubric order."""
        return tuple(c.criterion for c in self.criteria if not c.met and not c.held)

    @property
    def undecided(self) -> bool:
        """Not passed, and every unmet criterion is held back rather than failed: the gate cannot decide (exit 2)."""
        return not self.passed and all(c.met or c.held for c in self.criteria)

    @property
    def reason(self) -> str:
        return "undecided: " + "; ".join(self.held) if self.undecided else ""

    @property
    def exit_code(self) -> int:
        return EXIT_PASSED if self.passed else EXIT_UNDECIDED if self.undecided else EXIT_FAILED

    def as_dict(self) -> dict:
        return {
            "passed": None if self.undecided else self.passed,
            **({"error": self.reason} if self.undecided else {}),
            "binding_criterion": self.binding_criterion,
            "met_count": self.met_count,
            "gating_count": self.gating_count,
            "failed_criteria": [] if self.undecided else list(self.failed_criteria),
            "criteria": [c.as_dict() for c in self.criteria],
            "provenance": [s.as_dict() for s in self.provenance],
        }


def undecided_dict(reason: str) -> dict:
    """The answer when the gate cannot decide: the same for `gate --format json` and the HTTP API."""
    return {"passed": None, "error": reason}


@dataclass(frozen=True)
class GateOutcome:
    """What a caller shows: the decision, or why there is none, and the stored record."""

    decision: GateDecision | None
    reason: str
    record: GateResult

    @property
    def exit_code(self) -> int:
        return self.decision.exit_code if self.decision else EXIT_UNDECIDED


def render_text(outcome: GateOutcome) -> str:
    if outcome.decision is None:
        return f"CANNOT DECIDE: {outcome.reason}"
    d = outcome.decision
    head = "CANNOT DECIDE" if d.undecided else "PASSED" if d.passed else "FAILED"
    lines = [
        f"{head}: every gating criterion must have the lower bound its policy decides "
        f"on (at its confidence) >= its minimum pass rate and an ERROR rate <= its maximum ({d.tightening.describe()})",
        f"{'criterion':<28} {'n':>6} {'passes':>7} {'pass rate':>9} {'lower':>7} {'corr':>6} {'c.lower':>7} "
        f"{'a.lower':>7} {'decides':>8} {'min':>5} {'conf':>5} {'errors':>6} {'err rate':>8} {'max':>5}  met",
    ]
    for c in d.criteria:
        t = c.thresholds
        corr = c.corrected
        decides = {CORRECTED_LOWER: "corrected", AUDIT: "audit"}.get(t.decide_on, "observed")
        lines.append(
            f"{c.criterion:<28} {c.n:>6} {c.passes:>7} {fmt(c.pass_rate):>9} {fmt(c.wilson_lower):>7} "
            f"{fmt(corr.estimate if corr else None):>6} {fmt(corr.lower if corr else None):>7} "
            f"{fmt(c.audit.lower if c.audit else None):>7} {decides:>8} "
            f"{t.min_pass_rate:>5g} {t.confidence:>5g} {c.errors:>6} {fmt(c.error_rate):>8} {t.max_error_rate:>5g}  "
            f"{'yes' if c.met else 'held' if c.held else 'NO'}"
        )
    lines.append(
        "lower: Wilson bound of the judge's pass rate; corr / c.lower: the pass rate corrected for the judge's own "
        f"errors (Rogan-Gladen, its TPR and TNR on the calibration the mark relied on: it {ASSUMES_CALIBRATION}) and "
        "its lower bound; a.lower: the anytime-valid lower bound of an audit of the candidate (decides on its own "
        "decision, PASS or FAIL)"
    )
    for c in d.criteria:
        if c.audit is not None:  # which audit decided it, and what its tests read beside gold (issue 38)
            lines.append(f"{c.criterion}: {c.audit_in_words}")
        lines.extend(f"{c.criterion}: {said}" for said in evidence_lines(c))
    if d.failed_criteria and not d.undecided:
        lines.append("failed on: " + ", ".join(d.failed_criteria))
    lines.append(f"binding criterion: {d.binding_criterion}")
    lines.append("verdicts from: " + ("; ".join(s.describe() for s in d.provenance) or "none"))
    lines.append(f"{d.met_count} of {d.gating_count} criteria met (information only: the gate is conjunctive)")
    return "\n".join(lines)
