"""The release gate: judge verdicts on a release candidate, gating criteria only, lower bounds of pass rates.

Conjunctive: the gate passes only if every gating criterion's lower bound on its pass rate reaches the
minimum AND its ERROR rate stays at or under the maximum. Which lower bound is the lead's choice, stored
with the mark (calibration/policy.py): the pass rate corrected for the judge's own errors (Rogan-Gladen,
with the TPR and TNR of the calibration the mark relied on; the default), or the observed Wilson bound.
Both are always reported. Or, per mark, the audit of the candidate itself (decide_on "audit", calibration/audits.py):
the open audit plan for the criterion, candidate, agent version and judge config decides, met on PASS and not met on
FAIL at the policy's minimum and confidence (or the plan's, where stricter); while it is undecided, or without a
plan, the gate cannot decide (exit 2) and says how many more labels the forecast expects. The audit borrows nothing
from the calibration and its judge errors cost labels, not validity, so its criterion's ERROR rate is reported
but does not decide. "k of n criteria met" is
reported as information, never as the verdict (a strong criterion must not pay for a weak one).
The binding criterion is the one that decided: if the gate failed, the unmet criterion furthest from
its limits (the most negative of lower bound - minimum pass rate and maximum error rate - error
rate); if it passed, the criterion whose lower bound is closest to the minimum (then the one closest
to the maximum error rate). Ties go to the earlier criterion in rubric order.

Each gating criterion is held to the policy the lead stored with its mark (calibration/policy.py); a
caller may only tighten it, and a looser value is refused (PolicyRefused) before anything is stored.

Cannot decide (exit 2) is not a failure of the agent: no approved gating criteria, a gating
criterion with no verdicts at all, a gating criterion whose lead requires a clean probe run (of the
judge on the mark's calibration eval set) and whose newest one is not clean, a model or instrument
config whose verdicts came from an import (possible only before the provenance rule), or a name that
matches nothing.

Every decision says where its verdicts came from (`provenance`): each run whose verdicts are current, with
how many, and for imported ones how they came in (manage.py import_verdicts, or a push and its token).
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass

import pandas as pd

from evals.lookup import eval_set_named
from evals.models import EvalSet, RubricVersion
from evals.validators import UnknownName
from judging.judge_lookup import judge_named
from judging.models import JudgeConfig, JudgeRun
from labeling.gold import derive_gold

from . import frames as data
from . import probes
from .audits import AuditFigures, open_plan_for, plan_figures
from .frame_reading import confusion_cells, current_runs, current_verdicts
from .metrics import (
    BINARY,
    ERROR,
    PASS,
    CorrectedPassRate,
    TransportCheck,
    corrected_pass_rate,
    fmt,
    transport_check,
    wilson_interval,
)
from .models import GateResult, GatingMark
from .policy import AUDIT, CORRECTED_LOWER, WILSON_LOWER, GateThresholds, Tightening

EXIT_PASSED, EXIT_FAILED, EXIT_UNDECIDED = 0, 1, 2


class CannotDecide(Exception):
    """The gate has nothing it may decide on; the message says why and what to do."""


CALIBRATION_CELLS = ("true_pass", "false_pass", "false_fail", "true_fail")


@dataclass(frozen=True)
class Gating:
    """One gating criterion as its mark says: the lead's policy and the calibration the mark relied on
    (the eval set and the confusion cells of the report row stored with the mark; None if it holds none)."""

    criterion_id: int
    key: str
    policy: GateThresholds
    calibration_eval_set: str = ""
    calibration: tuple[int, int, int, int] | None = None

    @classmethod
    def from_mark(cls, criterion_id: int, key: str, policy: GateThresholds, eval_set: str, figures: dict) -> Gating:
        cells = [figures.get(name) for name in CALIBRATION_CELLS]
        ok = all(isinstance(c, int) and c >= 0 for c in cells)
        return cls(criterion_id, key, policy, eval_set, tuple(cells) if ok else None)  # type: ignore[arg-type]


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
    pass_margin: float  # the deciding lower bound - minimum pass rate (-inf without PASS/FAIL verdicts)
    error_margin: float  # maximum error rate - error rate
    thresholds: GateThresholds  # what applied: the lead's policy, tightened by the caller
    corrected: CorrectedPassRate | None = None  # None: the mark holds no calibration counts
    calibration_eval_set: str = ""
    calibration_n: int = 0
    audit: AuditFigures | None = None  # the audit plan's figures, where the policy decides on it
    # Where the policy decides on the corrected bound: the judge's TPR and TNR on the candidate's gold beside the
    # calibration's, and a warning when they moved (metrics.TransportCheck).
    transport: TransportCheck | None = None

    @property
    def binding_key(self) -> tuple:
        if not self.met:
            return (0, min(self.pass_margin, self.error_margin))
        return (1, self.pass_margin, self.error_margin)

    def as_dict(self) -> dict:
        c = self.corrected
        head = {k: getattr(self, k) for k in ("criterion", "n", "passes", "errors", "pass_rate", "wilson_lower")}
        corrected = {
            "corrected_pass_rate": c.estimate if c else None,
            "corrected_lower": c.lower if c else None,
            "corrected_upper": c.upper if c else None,
            "judge_tpr": c.tpr if c else None,
            "judge_tnr": c.tnr if c else None,
            "calibration_eval_set": self.calibration_eval_set,
            "calibration_n": self.calibration_n,
        }
        a = self.audit
        audit = {
            "audit_lower": a.lower if a else None,
            "audit_upper": a.upper if a else None,
            "audit_estimate": a.estimate if a else None,
            "audit_decided": a.decided if a else None,
            "audit_plan": a.plan if a else None,
            "audit_n_labeled": a.n_labeled if a else None,
            "audit_N": a.N if a else None,
        }
        tail = {k: getattr(self, k) for k in ("error_rate", "met")}
        return {**head, **corrected, **self.transport_dict(), **audit, **tail, **self.thresholds.as_dict()}

    def transport_dict(self) -> dict:
        """The transport check's keys (docs/calibration.md, The release gate): null unless it decides on corrected."""
        t = self.transport

        def ci(interval: tuple[float, float] | None) -> list[float] | None:
            return list(interval) if interval else None

        return {
            "judge_tpr_ci": ci(t.tpr.calibration_ci) if t else None,
            "judge_tnr_ci": ci(t.tnr.calibration_ci) if t else None,
            "candidate_gold_n": t.candidate_n if t else None,
            "candidate_tpr": t.tpr.candidate if t else None,
            "candidate_tpr_ci": ci(t.tpr.candidate_ci) if t else None,
            "candidate_tnr": t.tnr.candidate if t else None,
            "candidate_tnr_ci": ci(t.tnr.candidate_ci) if t else None,
            "transport_warning": t.warning if t else None,
        }


JUDGE_RUN, IMPORT, PUSH, PAGE = "judge_run", "import", "push", "page"


@dataclass(frozen=True)
class VerdictSource:
    """One run whose verdicts the gate decided on. `origin`: judge_run (the config's own run), import
    (manage.py import_verdicts, or an import made before provenance was recorded: then `file` is empty), page (a
    lead's file on the Import page) or push (POST /api/verdicts, with its token)."""

    run: int
    origin: str
    verdicts: int  # current verdict samples of the gating criteria from this run
    mode: str
    label: str
    file: str
    finished_at: str | None
    token: dict | None  # {"id", "project"} of the token that pushed it

    def as_dict(self) -> dict:
        return dataclasses.asdict(self)

    def describe(self) -> str:
        label = f' "{self.label}"' if self.label else ""
        if self.origin == JUDGE_RUN:
            how = f"judge run, {dict(JudgeRun.Mode.choices).get(self.mode, self.mode).lower()}"
        elif self.origin == PUSH:
            token = self.token or {}
            how = f"pushed with token {token.get('project', '?')!r} (id {token.get('id', '?')}), {self.file}"
        elif self.origin == PAGE:
            how = f"imported on the Import page, {self.file}"
        else:
            how = f"imported with manage.py import_verdicts, {self.file}" if self.file else "imported, how not recorded"
        return f"run {self.run}{label} ({how}): {self.verdicts:,}"


def verdict_sources(run_counts: dict[int, int]) -> tuple[VerdictSource, ...]:
    """The runs of `run_counts` (run id -> current verdicts) with their provenance, oldest first; one query."""
    runs = JudgeRun.objects.filter(pk__in=list(run_counts)).select_related("push__token").order_by("pk")
    return tuple(_source(run, run_counts[run.pk]) for run in runs)


def _source(run: JudgeRun, verdicts: int) -> VerdictSource:
    push = getattr(run, "push", None)
    if run.mode != JudgeRun.Mode.IMPORT:
        origin = JUDGE_RUN
    elif push is not None or run.imported_via == JudgeRun.ImportedVia.PUSH:
        origin = PUSH
    elif run.imported_via == JudgeRun.ImportedVia.PAGE:
        origin = PAGE
    else:
        origin = IMPORT
    return VerdictSource(
        run=run.pk,
        origin=origin,
        verdicts=verdicts,
        mode=run.mode,
        label=run.label,
        file=run.source_name,
        finished_at=run.finished_at.isoformat() if run.finished_at else None,
        token={"id": push.token_id, "project": push.token.project} if push is not None else None,
    )


def refuse_imports_into_a_run_config(judge_config: JudgeConfig, sources: tuple[VerdictSource, ...]) -> None:
    """CannotDecide if a model or instrument config's verdicts came from imports or pushes, which only a
    database from before the provenance rule can hold: they speak in the name of an instrument that never said
    them. Its own newer run supersedes them item by item."""
    if judge_config.takes_imports:
        return
    imported = [s for s in sources if s.origin != JUDGE_RUN]
    if imported:
        raise CannotDecide(
            f"{sum(s.verdicts for s in imported):,} of the verdicts to decide on came into judge config "
            f"{judge_config.name} ({judge_config.get_backend_display()}) from imports, not from its own judge runs: "
            + "; ".join(s.describe() for s in imported)
            + ". A model or instrument config's verdicts come only from its own runs (docs/security.md, Verdict "
            "provenance): run the judge on this eval set again, and its verdicts supersede these"
        )


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
    def exit_code(self) -> int:
        return EXIT_PASSED if self.passed else EXIT_FAILED

    def as_dict(self) -> dict:
        return {
            "passed": self.passed,
            "binding_criterion": self.binding_criterion,
            "met_count": self.met_count,
            "gating_count": self.gating_count,
            "criteria": [c.as_dict() for c in self.criteria],
            "provenance": [s.as_dict() for s in self.provenance],
        }


def undecided_dict(reason: str) -> dict:
    """The answer when the gate cannot decide: the same for `gate --format json` and the HTTP API."""
    return {"passed": None, "error": reason}


def _corrected(g: Gating, passes: int, n: int, thresholds: GateThresholds) -> CorrectedPassRate | None:
    """The corrected pass rate; CannotDecide if the policy decides on it and the calibration cannot give it."""
    corrected = corrected_pass_rate(passes, n, g.calibration, thresholds.confidence) if g.calibration else None
    if thresholds.decide_on != CORRECTED_LOWER or n == 0:
        return corrected  # without PASS/FAIL verdicts the criterion is simply not met
    if corrected is None or corrected.lower is None:
        why = corrected.reason if corrected else "the mark holds no calibration counts"
        raise CannotDecide(
            f"{g.key}: its gate policy decides on the pass rate corrected for the judge's errors, but {why} "
            f"(calibration on {g.calibration_eval_set or 'an unknown eval set'}); mark it again on a calibration "
            "with gold PASS and FAIL items, or have the lead decide on the observed lower bound"
        )
    return corrected


def evaluate(
    verdicts: pd.DataFrame,
    gating: list[Gating],
    tightening: Tightening,
    outputs: int | None = None,
    audits: dict[object, AuditFigures] | None = None,
    candidate_cells: dict[object, tuple[int, int, int, int]] | None = None,
) -> GateDecision:
    """Pure: current verdicts (criterion, judge) of the gating criteria, each with the lead's policy and its
    calibration -> the decision. PolicyRefused if `tightening` loosens any criterion's policy.

    `outputs` is how many outputs the release candidate has; a gating criterion with fewer verdicts
    than that cannot be decided (an incomplete run could otherwise pass on the part that was judged).
    `audits`: criterion id -> the decided audit figures of the criteria whose policy decides on an audit.
    `candidate_cells`: criterion id -> the judge's confusion cells against gold on the candidate (none: zeros),
    for the transport check of the criteria whose policy decides on the corrected bound.
    """
    audits = audits or {}
    candidate_cells = candidate_cells or {}
    applied = {g.key: tightening.applied_to(g.policy, g.key) for g in gating}
    if not gating:
        raise CannotDecide("no criteria are approved as gating for this rubric version and judge config")
    by_criterion = {crit: g["judge"] for crit, g in verdicts.groupby("criterion", sort=False)}
    missing = [g.key for g in gating if g.criterion_id not in by_criterion]
    if len(missing) == len(gating):
        raise CannotDecide("there are no verdicts for any gating criterion: run the judge on this eval set first")
    if missing:
        raise CannotDecide(f"gating criteria without any verdict: {', '.join(missing)}; run the judge on them first")
    if outputs is not None:
        short = [
            f"{g.key} ({outputs - len(by_criterion[g.criterion_id])} of {outputs})"
            for g in gating
            if len(by_criterion[g.criterion_id]) < outputs
        ]
        if short:
            raise CannotDecide(
                "outputs without a verdict: " + ", ".join(short) + "; the judge run is incomplete "
                "(finish it, or pass --agent-version to gate one agent version)"
            )
    rows = []
    for g in gating:
        thresholds = applied[g.key]
        outcomes = by_criterion[g.criterion_id]
        total = len(outcomes)
        passes, n = int(outcomes.eq(PASS).sum()), int(outcomes.isin(BINARY).sum())
        errors = int(outcomes.eq(ERROR).sum())
        wilson = wilson_interval(passes, n, thresholds.confidence).lower
        corrected = _corrected(g, passes, n, thresholds)
        audit = audits.get(g.criterion_id) if thresholds.decide_on == AUDIT else None
        if audit is not None:  # it decided at the plan's thresholds where they are stricter: report those
            thresholds = dataclasses.replace(thresholds, min_pass_rate=audit.min_pass_rate, confidence=audit.confidence)
        bound = {CORRECTED_LOWER: corrected.lower if corrected else None, WILSON_LOWER: wilson}.get(
            thresholds.decide_on, audit.lower if audit else None
        )
        error_rate = errors / total
        pass_margin = -math.inf if bound is None else bound - thresholds.min_pass_rate
        error_margin = thresholds.max_error_rate - error_rate
        if audit is not None:
            met = audit.decided == PASS
        else:
            met = pass_margin >= 0 and error_margin >= 0
        transport = None
        if thresholds.decide_on == CORRECTED_LOWER and g.calibration:
            cells = candidate_cells.get(g.criterion_id, (0, 0, 0, 0))
            transport = transport_check(calibration=g.calibration, candidate=cells)
        rows.append(
            GateCriterion(
                criterion=g.key,
                n=n,
                passes=passes,
                errors=errors,
                verdicts=total,
                pass_rate=passes / n if n else None,
                wilson_lower=wilson,
                error_rate=error_rate,
                met=met,
                pass_margin=pass_margin,
                error_margin=error_margin,
                thresholds=thresholds,
                corrected=corrected,
                calibration_eval_set=g.calibration_eval_set,
                calibration_n=sum(g.calibration) if g.calibration else 0,
                audit=audit,
                transport=transport,
            )
        )
    binding = min(rows, key=lambda r: r.binding_key)  # min() keeps the first of equals: rubric order
    return GateDecision(all(r.met for r in rows), binding.criterion, tuple(rows), tightening)


def gating_criteria(rubric_version: RubricVersion, judge_config: JudgeConfig) -> list[Gating]:
    """Every gating criterion with the lead's policy and the calibration its mark relied on, in rubric order."""
    marks = GatingMark.objects.for_instrument(rubric_version, judge_config).order_by("criterion__order", "criterion_id")
    policy_fields = ("min_pass_rate", "max_error_rate", "confidence", "decide_on")
    rows = marks.values_list("criterion_id", "criterion__key", "calibration_eval_set__name", "figures", *policy_fields)
    return [
        Gating.from_mark(crit, key, GateThresholds(*policy), eval_set, figures or {})
        for crit, key, eval_set, figures, *policy in rows
    ]


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
    stored = data.load_verdicts(scope, judge_config)
    stored = stored[stored["criterion"].isin({g.criterion_id for g in gating})]
    sources = verdict_sources(current_runs(stored))
    refuse_imports_into_a_run_config(judge_config, sources)
    outputs = len(data.load_agent_versions(scope))
    audits = decided_audits(gating, tightening, eval_set, rubric_version, judge_config, agent_version)
    current = current_verdicts(stored)
    cells = None
    if any(tightening.applied_to(g.policy, g.key).decide_on == CORRECTED_LOWER for g in gating):
        # The transport check: any gold on the candidate (an audit's, or labels made for any other reason).
        policies = {c.pk: c.gold_policy for c in data.criteria_of(rubric_version)}
        gold = derive_gold(data.load_labels(scope), data.load_adjudicated(scope), policies)
        cells = confusion_cells(current, gold)
    decision = evaluate(current, gating, tightening, outputs=outputs, audits=audits, candidate_cells=cells)
    return dataclasses.replace(decision, provenance=sources)


def decided_audits(
    gating: list[Gating],
    tightening: Tightening,
    eval_set: EvalSet,
    rubric_version: RubricVersion,
    judge_config: JudgeConfig,
    agent_version: str | None,
) -> dict[object, AuditFigures]:
    """The figures of the open audit plan of each criterion whose policy decides on an audit, at the stricter of
    the applied thresholds and the plan's (at the plan's own, its kept decision); CannotDecide if one has no plan,
    is not decided yet, or has a kept decision that today's gold reads otherwise."""
    audits: dict[object, AuditFigures] = {}
    for g in gating:
        thresholds = tightening.applied_to(g.policy, g.key)
        if thresholds.decide_on != AUDIT:
            continue
        plan = open_plan_for(
            criterion_id=g.criterion_id, eval_set=eval_set, judge_config=judge_config, agent_version=agent_version
        )
        agent = f" --agent-version {agent_version}" if agent_version else ""
        if plan is None:
            raise CannotDecide(
                f"undecided: {g.key} decides on an audit of the candidate and {eval_set.name} has no open audit plan "
                f"for it with judge {judge_config.name}; a lead starts one: manage.py audit_plan create --eval-set "
                f"{eval_set.name} --rubric {rubric_version.ref} --judge {judge_config.name} --criterion {g.key}{agent} "
                "--by LEAD"
            )
        figures = plan_figures(
            plan,
            minimum=max(thresholds.min_pass_rate, plan.min_pass_rate),
            confidence=max(thresholds.confidence, plan.confidence),
        )
        if figures.outputs_outside_order:
            raise CannotDecide(
                f"undecided: {figures.outputs_outside_order} outputs of {eval_set.name} came after audit plan "
                f"{plan.pk}'s order and are not in it, so its audit does not cover the candidate; close the plan and "
                "move the queue to start a new order"
            )
        if figures.kept is not None and figures.kept.differs:
            # The kept decision stands on the plan, but a release is not passed or failed on it while today's gold
            # reads otherwise: the lead looks at the changed gold first (issue 41).
            raise CannotDecide(
                f"undecided: {g.key}'s audit plan {plan.pk} {figures.kept.words}; the gate does not decide on it "
                "while the gold reads otherwise: a lead reviews the changed gold on the plan's page, then closes the "
                "plan and starts a new one"
            )
        if figures.decided is None:
            raise CannotDecide(
                f"undecided: about {figures.expected_more_labels} more labels by the forecast ({g.key}: audit plan "
                f"{plan.pk}, labeled {figures.n_labeled} of {figures.N}, anytime-valid interval "
                f"[{figures.lower:.3f}, {figures.upper:.3f}] around the minimum {figures.min_pass_rate:g}); release "
                f"more with manage.py audit_plan next {plan.pk}"
            )
        audits[g.criterion_id] = figures
    return audits


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


def gate_and_record(request: GateRequest, *, source: str, token=None, asked_by=None) -> GateOutcome:
    """Resolve the names, run the gate, and store the result (also when it cannot decide). The command line,
    the HTTP API and the gate page all call this; `asked_by` is the person on the gate page, `token` the API's
    token (api.GateToken) that asked over HTTP.

    PolicyRefused (a looser threshold than the lead's) propagates and nothing is stored. Over HTTP an
    unknown name is not followed by the names that exist (a token holder learns nothing beyond its scope).
    """
    resolved: dict = {}
    decision, reason = None, ""
    say_known = source != GateResult.Source.HTTP
    try:
        resolved["eval_set"] = eval_set_named(request.eval_set, say_known=say_known)
        resolved["rubric_version"] = RubricVersion.objects.by_ref(request.rubric, say_known=say_known)
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
        f"{'PASSED' if d.passed else 'FAILED'}: every gating criterion must have the lower bound its policy decides "
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
            f"{'yes' if c.met else 'NO'}"
        )
    lines.append(
        "lower: Wilson bound of the judge's pass rate; corr / c.lower: the pass rate corrected for the judge's own "
        "errors (Rogan-Gladen, its TPR and TNR on the calibration the mark relied on) and its lower bound; a.lower: "
        "the anytime-valid lower bound of an audit of the candidate (decides on its own decision, PASS or FAIL)"
    )
    for c in d.criteria:
        if c.transport is not None and c.transport.warning:
            tnr = c.transport.tnr
            lines.append(
                f"warning: {c.criterion}: {c.transport.warning} (TNR {fmt(tnr.calibration)} on the calibration, "
                f"{fmt(tnr.candidate)} on {c.transport.candidate_n} gold items of the candidate)"
            )
    lines.append(f"binding criterion: {d.binding_criterion}")
    lines.append("verdicts from: " + ("; ".join(s.describe() for s in d.provenance) or "none"))
    lines.append(f"{d.met_count} of {d.gating_count} criteria met (information only: the gate is conjunctive)")
    return "\n".join(lines)
