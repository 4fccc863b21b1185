"""The release gate: judge verdicts on a release candidate, gating criteria only, Wilson lower bounds.

Conjunctive: the gate passes only if every gating criterion's Wilson lower bound on its pass rate
reaches the minimum AND its ERROR rate stays at or under the maximum. "k of n criteria met" is
reported as information, never as the verdict (a strong criterion must not pay for a weak one).
The binding criterion is the one that decided: if the gate failed, the unmet criterion furthest from
its limits (the most negative of lower bound - minimum pass rate and maximum error rate - error
rate); if it passed, the criterion whose lower bound is closest to the minimum (then the one closest
to the maximum error rate). Ties go to the earlier criterion in rubric order.

Each gating criterion is held to the policy the lead stored with its mark (calibration/policy.py); a
caller may only tighten it, and a looser value is refused (PolicyRefused) before anything is stored.

Cannot decide (exit 2) is not a failure of the agent: no approved gating criteria, a gating
criterion with no verdicts at all, a gating criterion whose lead requires a clean probe run (of the
judge on the mark's calibration eval set) and whose newest one is not clean, or a name that matches
nothing.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import pandas as pd

from judging.models import JudgeConfig
from labeling.models import EvalSet, RubricVersion

from . import data, probes
from .lookup import UnknownName, eval_set_named, judge_named, rubric_version_named
from .metrics import BINARY, ERROR, PASS, fmt, wilson_interval
from .models import GateResult, GateToken, GatingMark
from .policy import GateThresholds, Tightening
from .reading import current_verdicts

EXIT_PASSED, EXIT_FAILED, EXIT_UNDECIDED = 0, 1, 2


class CannotDecide(Exception):
    """The gate has nothing it may decide on; the message says why and what to do."""


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
    thresholds: GateThresholds  # what applied: the lead's policy, tightened by the caller

    @property
    def binding_key(self) -> tuple:
        if not self.met:
            return (0, min(self.pass_margin, self.error_margin))
        return (1, self.pass_margin, self.error_margin)

    def as_dict(self) -> dict:
        keys = ("criterion", "n", "passes", "errors", "pass_rate", "wilson_lower", "error_rate", "met")
        return {**{k: getattr(self, k) for k in keys}, **self.thresholds.as_dict()}


@dataclass(frozen=True)
class GateDecision:
    passed: bool
    binding_criterion: str | None
    criteria: tuple[GateCriterion, ...]
    tightening: Tightening

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


def undecided_dict(reason: str) -> dict:
    """The answer when the gate cannot decide: the same for `gate --format json` and the HTTP API."""
    return {"passed": None, "error": reason}


def evaluate(
    verdicts: pd.DataFrame,
    gating: list[tuple[object, str, GateThresholds]],
    tightening: Tightening,
    outputs: int | None = None,
) -> GateDecision:
    """Pure: current verdicts (criterion, judge) of the gating criteria, each with the lead's policy -> the
    decision. PolicyRefused if `tightening` loosens any criterion's policy.

    `outputs` is how many outputs the release candidate has; a gating criterion with fewer verdicts
    than that cannot be decided (an incomplete run could otherwise pass on the part that was judged).
    """
    applied = {key: tightening.applied_to(policy, key) for _, key, policy in gating}
    if not gating:
        raise CannotDecide("no criteria are approved as gating for this rubric version and judge config")
    by_criterion = {crit: g["judge"] for crit, g in verdicts.groupby("criterion", sort=False)}
    missing = [key for crit, key, _ in gating if crit not in by_criterion]
    if len(missing) == len(gating):
        raise CannotDecide("there are no verdicts for any gating criterion: run the judge on this eval set first")
    if missing:
        raise CannotDecide(f"gating criteria without any verdict: {', '.join(missing)}; run the judge on them first")
    if outputs is not None:
        short = [
            f"{key} ({outputs - len(by_criterion[crit])} of {outputs})"
            for crit, key, _ in gating
            if len(by_criterion[crit]) < outputs
        ]
        if short:
            raise CannotDecide(
                "outputs without a verdict: " + ", ".join(short) + "; the judge run is incomplete "
                "(finish it, or pass --agent-version to gate one agent version)"
            )
    rows = []
    for crit, key, _ in gating:
        thresholds = applied[key]
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
                thresholds=thresholds,
            )
        )
    binding = min(rows, key=lambda r: r.binding_key)  # min() keeps the first of equals: rubric order
    return GateDecision(all(r.met for r in rows), binding.criterion, tuple(rows), tightening)


def gating_criteria(rubric_version: RubricVersion, judge_config: JudgeConfig) -> list[tuple[int, str, GateThresholds]]:
    """(criterion id, key, the lead's policy) of every gating criterion, in rubric order."""
    marks = GatingMark.objects.for_instrument(rubric_version, judge_config).order_by("criterion__order", "criterion_id")
    rows = marks.values_list("criterion_id", "criterion__key", "min_pass_rate", "max_error_rate", "confidence")
    return [(crit, key, GateThresholds(*policy)) for crit, key, *policy in rows]


def run_gate(
    *,
    eval_set: EvalSet,
    rubric_version: RubricVersion,
    judge_config: JudgeConfig,
    tightening: Tightening,
    agent_version: str | None = None,
) -> GateDecision:
    gating = gating_criteria(rubric_version, judge_config)
    if not gating:
        approved = rubric_version.status == RubricVersion.Status.APPROVED
        raise CannotDecide(
            f"no criteria of {rubric_version.ref} are approved as gating with judge {judge_config.name}"
            + ("" if approved else " (the rubric version is not approved)")
        )
    unclean = probes.gate_refusal(rubric_version, judge_config)
    if unclean:
        raise CannotDecide(f"gating criteria whose lead requires a clean probe run have none: {unclean}")
    scope = data.Scope(eval_set, rubric_version, agent_version)
    verdicts = current_verdicts(data.load_verdicts(scope, judge_config))
    ids = {crit for crit, _, _ in gating}
    outputs = len(data.load_agent_versions(scope))
    return evaluate(verdicts[verdicts["criterion"].isin(ids)], gating, tightening, outputs=outputs)


@dataclass(frozen=True)
class GateRequest:
    eval_set: str
    rubric: str
    judge: str
    agent_version: str | None
    tightening: Tightening


@dataclass(frozen=True)
class GateOutcome:
    """What a caller shows: the decision, or why there is none, and the stored record."""

    decision: GateDecision | None
    reason: str
    record: GateResult

    @property
    def exit_code(self) -> int:
        return self.decision.exit_code if self.decision else EXIT_UNDECIDED


def gate_and_record(request: GateRequest, *, source: str, token: GateToken | None = None, asked_by=None) -> GateOutcome:
    """Resolve the names, run the gate, and store the result (also when it cannot decide). The command line,
    the HTTP API and the gate page all call this; `asked_by` is the person on the gate page.

    PolicyRefused (a looser threshold than the lead's) propagates and nothing is stored. Over HTTP an
    unknown name is not followed by the names that exist (a token holder learns nothing beyond its scope).
    """
    resolved: dict = {}
    decision, reason = None, ""
    say_known = source != GateResult.Source.HTTP
    try:
        resolved["eval_set"] = eval_set_named(request.eval_set, say_known=say_known)
        resolved["rubric_version"] = rubric_version_named(request.rubric, say_known=say_known)
        resolved["judge_config"] = judge_named(request.judge, say_known=say_known)
        if token is not None and resolved["rubric_version"].pk != token.rubric_version_id:
            raise CannotDecide(f"this token may only gate on {token.rubric_version.ref}")
        decision = run_gate(**resolved, tightening=request.tightening, agent_version=request.agent_version)
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
        min_pass_rate=request.tightening.min_pass_rate,
        max_error_rate=request.tightening.max_error_rate,
        confidence=request.tightening.confidence,
        binding_criterion=(decision.binding_criterion or "") if decision else "",
        met_count=decision.met_count if decision else 0,
        gating_count=decision.gating_count if decision else 0,
        result=decision.as_dict() if decision else {},
        reason=reason,
        token=token,
        asked_by=asked_by,
        **resolved,
    )
    return GateOutcome(decision, reason, record)


def render_text(outcome: GateOutcome) -> str:
    if outcome.decision is None:
        return f"CANNOT DECIDE: {outcome.reason}"
    d = outcome.decision
    lines = [
        f"{'PASSED' if d.passed else 'FAILED'}: every gating criterion must have a Wilson lower bound (at its "
        f"confidence) >= its minimum pass rate and an ERROR rate <= its maximum ({d.tightening.describe()})",
        f"{'criterion':<28} {'n':>6} {'passes':>7} {'pass rate':>9} {'lower':>7} {'min':>5} {'conf':>5} "
        f"{'errors':>6} {'err rate':>8} {'max':>5}  met",
    ]
    for c in d.criteria:
        t = c.thresholds
        lines.append(
            f"{c.criterion:<28} {c.n:>6} {c.passes:>7} {fmt(c.pass_rate):>9} {fmt(c.wilson_lower):>7} "
            f"{t.min_pass_rate:>5g} {t.confidence:>5g} {c.errors:>6} {fmt(c.error_rate):>8} {t.max_error_rate:>5g}  "
            f"{'yes' if c.met else 'NO'}"
        )
    lines.append(f"binding criterion: {d.binding_criterion}")
    lines.append(f"{d.met_count} of {d.gating_count} criteria met (information only: the gate is conjunctive)")
    return "\n".join(lines)
