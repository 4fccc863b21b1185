"""The release gate: judge verdicts on a release candidate, gating criteria only, Wilson lower bounds.

Conjunctive: the gate passes only if every gating criterion's Wilson lower bound on its pass rate
reaches the minimum AND its ERROR rate stays at or under the maximum. "k of n criteria met" is
reported as information, never as the verdict (a strong criterion must not pay for a weak one).
The binding criterion is the one that decided: if the gate failed, the unmet criterion furthest from
its limits (the most negative of lower bound - minimum pass rate and maximum error rate - error
rate); if it passed, the criterion whose lower bound is closest to the minimum (then the one closest
to the maximum error rate). Ties go to the earlier criterion in rubric order.

Cannot decide (exit 2) is not a failure of the agent: no approved gating criteria, a gating
criterion with no verdicts at all, or a name that matches nothing.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import pandas as pd

from judging.models import JudgeConfig
from labeling.models import EvalSet, RubricVersion

from . import data
from .lookup import UnknownName, eval_set_named, judge_named, rubric_version_named
from .metrics import BINARY, ERROR, PASS, fmt, wilson_interval
from .models import GateResult, GateToken, GatingMark
from .reading import current_verdicts

# PROVISIONAL (2026-11-30): the defaults the issue names. 0.90 is a product decision, not derived
# from data: "at worst 9 in 10 outputs pass this criterion" with 95% confidence. 0.02 follows the
# background (000): "fail the run outright if the error rate passes a few percent, since a degraded
# judge invalidates every other number"; two percent is the strict end of "a few".
DEFAULT_MIN_PASS_RATE = 0.90
DEFAULT_MAX_ERROR_RATE = 0.02
DEFAULT_CONFIDENCE = 0.95

EXIT_PASSED, EXIT_FAILED, EXIT_UNDECIDED = 0, 1, 2


class CannotDecide(Exception):
    """The gate has nothing it may decide on; the message says why and what to do."""


@dataclass(frozen=True)
class GateThresholds:
    min_pass_rate: float = DEFAULT_MIN_PASS_RATE
    max_error_rate: float = DEFAULT_MAX_ERROR_RATE
    confidence: float = DEFAULT_CONFIDENCE

    def __post_init__(self) -> None:
        for name in ("min_pass_rate", "max_error_rate"):
            value = getattr(self, name)
            if not isinstance(value, int | float) or math.isnan(value) or not 0.0 <= value <= 1.0:
                raise ValueError(f"{name.replace('_', '-')} must be a number from 0 to 1, got {value!r}")
        c = self.confidence
        if not isinstance(c, int | float) or math.isnan(c) or not 0.0 < c < 1.0:
            raise ValueError(f"confidence must be a number strictly between 0 and 1, got {c!r}")


@dataclass(frozen=True)
class GateCriterion:
    criterion: str
    n: int  # PASS + FAIL verdicts
    passes: int
    errors: int
    verdicts: int  # every current verdict, whatever its outcome
    pass_rate: float | None
    wilson_lower: float | None
    error_rate: float | None
    met: bool
    pass_margin: float  # lower bound - minimum pass rate (-inf without PASS/FAIL verdicts)
    error_margin: float  # maximum error rate - error rate

    @property
    def binding_key(self) -> tuple:
        if not self.met:
            return (0, min(self.pass_margin, self.error_margin))
        return (1, self.pass_margin, self.error_margin)

    def as_dict(self) -> dict:
        keys = ("criterion", "n", "passes", "errors", "pass_rate", "wilson_lower", "error_rate", "met")
        return {k: getattr(self, k) for k in keys}


@dataclass(frozen=True)
class GateDecision:
    passed: bool
    binding_criterion: str | None
    criteria: tuple[GateCriterion, ...]
    thresholds: GateThresholds

    @property
    def met_count(self) -> int:
        return sum(c.met for c in self.criteria)

    @property
    def gating_count(self) -> int:
        return len(self.criteria)

    @property
    def exit_code(self) -> int:
        return EXIT_PASSED if self.passed else EXIT_FAILED

    def as_dict(self) -> dict:
        return {
            "passed": self.passed,
            "binding_criterion": self.binding_criterion,
            "met_count": self.met_count,
            "gating_count": self.gating_count,
            "criteria": [c.as_dict() for c in self.criteria],
        }


def evaluate(
    verdicts: pd.DataFrame,
    gating: list[tuple[object, str]],
    thresholds: GateThresholds,
    outputs: int | None = None,
) -> GateDecision:
    """Pure: current verdicts (criterion, judge) of the gating criteria -> the decision.

    `outputs` is how many outputs the release candidate has; a gating criterion with fewer verdicts
    than that cannot be decided (an incomplete run could otherwise pass on the part that was judged).
    """
    if not gating:
        raise CannotDecide("no criteria are approved as gating for this rubric version and judge config")
    by_criterion = {crit: g["judge"] for crit, g in verdicts.groupby("criterion", sort=False)}
    missing = [key for crit, key in gating if crit not in by_criterion]
    if len(missing) == len(gating):
        raise CannotDecide("there are no verdicts for any gating criterion: run the judge on this eval set first")
    if missing:
        raise CannotDecide(f"gating criteria without any verdict: {', '.join(missing)}; run the judge on them first")
    if outputs is not None:
        short = [
            f"{key} ({outputs - len(by_criterion[crit])} of {outputs})"
            for crit, key in gating
            if len(by_criterion[crit]) < outputs
        ]
        if short:
            raise CannotDecide(
                "outputs without a verdict: " + ", ".join(short) + "; the judge run is incomplete "
                "(finish it, or pass --agent-version to gate one agent version)"
            )
    rows = []
    for crit, key in gating:
        outcomes = by_criterion[crit]
        total = len(outcomes)
        passes, n = int(outcomes.eq(PASS).sum()), int(outcomes.isin(BINARY).sum())
        errors = int(outcomes.eq(ERROR).sum())
        bound = wilson_interval(passes, n, thresholds.confidence).lower
        error_rate = errors / total
        pass_margin = -math.inf if bound is None else bound - thresholds.min_pass_rate
        error_margin = thresholds.max_error_rate - error_rate
        rows.append(
            GateCriterion(
                criterion=key,
                n=n,
                passes=passes,
                errors=errors,
                verdicts=total,
                pass_rate=passes / n if n else None,
                wilson_lower=bound,
                error_rate=error_rate,
                met=pass_margin >= 0 and error_margin >= 0,
                pass_margin=pass_margin,
                error_margin=error_margin,
            )
        )
    binding = min(rows, key=lambda r: r.binding_key)  # min() keeps the first of equals: rubric order
    return GateDecision(all(r.met for r in rows), binding.criterion, tuple(rows), thresholds)


def gating_criteria(rubric_version: RubricVersion, judge_config: JudgeConfig) -> list[tuple[int, str]]:
    marks = GatingMark.objects.for_instrument(rubric_version, judge_config).order_by("criterion__order", "criterion_id")
    return list(marks.values_list("criterion_id", "criterion__key"))


def run_gate(
    *,
    eval_set: EvalSet,
    rubric_version: RubricVersion,
    judge_config: JudgeConfig,
    thresholds: GateThresholds,
    agent_version: str | None = None,
) -> GateDecision:
    gating = gating_criteria(rubric_version, judge_config)
    if not gating:
        approved = rubric_version.status == RubricVersion.Status.APPROVED
        raise CannotDecide(
            f"no criteria of {rubric_version.ref} are approved as gating with judge {judge_config.name}"
            + ("" if approved else " (the rubric version is not approved)")
        )
    scope = data.Scope(eval_set, rubric_version, agent_version)
    verdicts = current_verdicts(data.load_verdicts(scope, judge_config))
    ids = {crit for crit, _ in gating}
    outputs = len(data.load_agent_versions(scope))
    return evaluate(verdicts[verdicts["criterion"].isin(ids)], gating, thresholds, outputs=outputs)


@dataclass(frozen=True)
class GateRequest:
    eval_set: str
    rubric: str
    judge: str
    agent_version: str | None
    thresholds: GateThresholds


@dataclass(frozen=True)
class GateOutcome:
    """What a caller shows: the decision, or why there is none, and the stored record."""

    decision: GateDecision | None
    reason: str
    record: GateResult

    @property
    def exit_code(self) -> int:
        return self.decision.exit_code if self.decision else EXIT_UNDECIDED


def gate_and_record(request: GateRequest, *, source: str, token: GateToken | None = None) -> GateOutcome:
    """Resolve the names, run the gate, and store the result (also when it cannot decide)."""
    resolved: dict = {}
    decision, reason = None, ""
    try:
        resolved["eval_set"] = eval_set_named(request.eval_set)
        resolved["rubric_version"] = rubric_version_named(request.rubric)
        resolved["judge_config"] = judge_named(request.judge)
        if token is not None and resolved["rubric_version"].rubric_id != token.rubric_id:
            raise CannotDecide(f"this token is for the rubric {token.rubric.name!r}, not {request.rubric!r}")
        decision = run_gate(**resolved, thresholds=request.thresholds, agent_version=request.agent_version)
    except (UnknownName, CannotDecide) as exc:
        reason = str(exc)
    record = GateResult.objects.create(
        decision=(
            GateResult.Decision.UNDECIDED
            if decision is None
            else GateResult.Decision.PASSED
            if decision.passed
            else GateResult.Decision.FAILED
        ),
        source=source,
        eval_set_name=request.eval_set,
        rubric_ref=request.rubric,
        judge_name=request.judge,
        agent_version=request.agent_version or "",
        min_pass_rate=request.thresholds.min_pass_rate,
        max_error_rate=request.thresholds.max_error_rate,
        confidence=request.thresholds.confidence,
        binding_criterion=(decision.binding_criterion or "") if decision else "",
        met_count=decision.met_count if decision else 0,
        gating_count=decision.gating_count if decision else 0,
        result=decision.as_dict() if decision else {},
        reason=reason,
        token=token,
        **resolved,
    )
    return GateOutcome(decision, reason, record)


def render_text(outcome: GateOutcome) -> str:
    if outcome.decision is None:
        return f"CANNOT DECIDE: {outcome.reason}"
    d = outcome.decision
    t = d.thresholds
    lines = [
        f"{'PASSED' if d.passed else 'FAILED'}: every gating criterion must have a {t.confidence:.0%} Wilson lower "
        f"bound >= {t.min_pass_rate:g} and an ERROR rate <= {t.max_error_rate:g}",
        f"{'criterion':<28} {'n':>6} {'passes':>7} {'pass rate':>9} {'lower':>7} {'errors':>6} {'err rate':>8}  met",
    ]
    for c in d.criteria:
        lines.append(
            f"{c.criterion:<28} {c.n:>6} {c.passes:>7} {fmt(c.pass_rate):>9} {fmt(c.wilson_lower):>7} "
            f"{c.errors:>6} {fmt(c.error_rate):>8}  {'yes' if c.met else 'NO'}"
        )
    lines.append(f"binding criterion: {d.binding_criterion}")
    lines.append(f"{d.met_count} of {d.gating_count} criteria met (information only: the gate is conjunctive)")
    return "\n".join(lines)
