"""The release gate: judge verdicts on a release candidate, gating criteria only, lower bounds of pass rates.

Conjunctive: the gate passes only if every gating criterion's lower bound on its pass rate reaches the
minimum AND its ERROR rate stays at or under the maximum. Which lower bound is the lead's choice, stored
with the mark (calibration/stats/policy.py): the pass rate corrected for the judge's own errors (Rogan-Gladen,
with the TPR and TNR of the calibration the mark relied on; the default), or the observed Wilson bound.
Both are always reported. Or, per mark, the audit of the candidate itself (decide_on "audit", audits/plans.py):
the open audit plan for the criterion, candidate, agent version and judge config decides, met on PASS and not met on
FAIL at the policy's minimum and confidence (or the plan's, where stricter); of k criteria decided by audits (their
plans share the eval set's one order), each PASS at alpha per side and each FAIL at alpha / k (the union bound:
candidate_gold.decided_audits, calibration/stats/audit_shared.py); while it is undecided, or without a
plan, the gate cannot decide (exit 2) and says how many more labels the forecast expects. The audit borrows nothing
from the calibration and its judge errors cost labels, not validity, so its criterion's ERROR rate is reported
but does not decide. "k of n criteria met" is
reported as information, never as the verdict (a strong criterion must not pay for a weak one).
The binding criterion is the one that decided: if the gate failed, the unmet criterion furthest from
its limits (the most negative of lower bound - minimum pass rate and maximum error rate - error
rate); if it passed, the criterion whose lower bound is closest to the minimum (then the one closest
to the maximum error rate). Ties go to the earlier criterion in rubric order.

Each gating criterion is held to the policy the lead stored with its mark (calibration/stats/policy.py); a
caller may only tighten it, and a looser value is refused (PolicyRefused) before anything is stored.

Cannot decide (exit 2) is not a failure of the agent: no approved gating criteria, a gating
criterion with no verdicts at all, a gating criterion whose lead requires a clean probe run (of the
judge on the mark's calibration eval set) and whose newest one is not clean, a model or instrument
config whose verdicts came from an import (possible only before the provenance rule), or a name that
matches nothing.

Every decision says where its verdicts came from (`provenance`): each run whose verdicts are current, with
how many, and for imported ones how they came in (manage.py import_verdicts, or a push and its token).

Here are the rule (`evaluate`) and its run (`run_gate`, `gate_and_record`); beside it one criterion's bounds
(criterion_bounds.py), the candidate's own gold and audit (candidate_gold.py), the verdicts' provenance
(verdict_sources.py), what a caller asks (request.py) and the answer it gets (answers.py).
"""

from __future__ import annotations

import dataclasses
import math

import pandas as pd

from calibration.audits.figures import AuditFigures
from calibration.data import frames
from calibration.data.frame_reading import confusion_cells, current_runs, current_verdicts
from calibration.gate.answers import GateDecision, GateOutcome
from calibration.gate.candidate_gold import against_gold, candidate_gold_bounds, decided_audits
from calibration.gate.criterion_bounds import AuditLevels, GateCriterion, Gating, corrected_bound
from calibration.gate.request import CannotDecide, GateRequest
from calibration.gate.verdict_sources import JUDGE_RUN, VerdictSource, verdict_sources
from calibration.models import GateResult, GatingMark
from calibration.report import robustness
from calibration.stats.candidate_evidence import GoldBound, transport_test
from calibration.stats.metrics import BINARY, ERROR, PASS, wilson_interval
from calibration.stats.policy import AUDIT, CORRECTED_LOWER, WILSON_LOWER, GateThresholds, Tightening
from evals.lookup import eval_set_named
from evals.models import EvalSet, RubricVersion, Workspace
from evals.validators import UnknownName
from judging.judge_lookup import judge_named
from judging.models import JudgeConfig
from labeling import label_frames
from labeling.gold import derive_gold


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


def evaluate(
    verdicts: pd.DataFrame,
    gating: list[Gating],
    tightening: Tightening,
    outputs: int | None = None,
    audits: dict[object, AuditFigures] | None = None,
    candidate_cells: dict[object, tuple[int, int, int, int]] | None = None,
    gold: dict[object, GoldBound] | None = None,
    audit_levels: dict[object, AuditLevels] | None = None,
    audit_waiting: dict[object, str] | None = None,
) -> GateDecision:
    """Pure: current verdicts (criterion, judge) of the gating criteria, each with the lead's policy and its
    calibration -> the decision. PolicyRefused if `tightening` loosens any criterion's policy.

    `outputs` is how many outputs the release candidate has; a gating criterion with fewer verdicts
    than that cannot be decided (an incomplete run could otherwise pass on the part that was judged).
    `audits`: criterion id -> the decided audit figures of the criteria whose policy decides on an audit.
    `candidate_cells`: criterion id -> the judge's confusion cells against gold on the candidate (none: zeros),
    for the transport test of the criteria whose mark holds calibration counts.
    `gold`: criterion id -> what the candidate's own gold says of its pass rate (`against_gold` reads it).
    `audit_levels`: criterion id -> the levels its audit decided at (PASS at alpha, FAIL at alpha / k: `audits`
    holds the decision already; these are said in the answer).
    `audit_waiting`: criterion id -> why its audit has not decided yet, where another audited criterion failed the
    release: held back (not failed), and never the binding criterion.
    """
    audits = audits or {}
    audit_levels = audit_levels or {}
    audit_waiting = audit_waiting or {}
    candidate_cells = candidate_cells or {}
    gold = gold or {}
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
        corrected = corrected_bound(g, passes, n, thresholds)
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
        if g.calibration:
            cells = candidate_cells.get(g.criterion_id, (0, 0, 0, 0))
            transport = transport_test(calibration=g.calibration, candidate=cells, level=1.0 - thresholds.confidence)
        refuted, held = against_gold(gold.get(g.criterion_id), thresholds, corrected, transport)
        if refuted or (held and met):
            met = False
        else:
            held = ""  # a criterion that fails on its own bound fails; nothing is held back
        if audit is None and g.criterion_id in audit_waiting:
            met, held = False, audit_waiting[g.criterion_id].removeprefix("undecided: ")
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
                audit_levels=audit_levels.get(g.criterion_id) if audit is not None else None,
                transport=transport,
                gold=gold.get(g.criterion_id),
                refuted=refuted,
                held=held,
            )
        )
    waiting = {g.key for g in gating if g.criterion_id in audit_waiting}
    pool = [r for r in rows if r.criterion not in waiting] or rows  # a criterion still waiting decided nothing
    binding = min(pool, key=lambda r: r.binding_key)  # min() keeps the first of equals: rubric order
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
    unclean = robustness.gate_refusal(rubric_version, judge_config)
    if unclean:
        raise CannotDecide(f"gating criteria whose lead requires a clean probe run have none: {unclean}")
    scope = label_frames.Scope(eval_set, rubric_version, agent_version)
    stored = frames.load_verdicts(scope, judge_config)
    stored = stored[stored["criterion"].isin({g.criterion_id for g in gating})]
    sources = verdict_sources(current_runs(stored))
    refuse_imports_into_a_run_config(judge_config, sources)
    outputs = len(frames.load_agent_versions(scope))
    audits, levels, waiting = decided_audits(gating, tightening, eval_set, rubric_version, judge_config, agent_version)
    current = current_verdicts(stored)
    # The candidate's own gold (an audit's, or labels made for any other reason): its bound and the transport test.
    policies = {c.pk: c.gold_policy for c in frames.criteria_of(rubric_version)}
    gold = derive_gold(label_frames.load_labels(scope), label_frames.load_adjudicated(scope), policies)
    cells = confusion_cells(current, gold)
    bounds = candidate_gold_bounds(
        gold,
        gating,
        tightening,
        outputs,
        audit_plan=dict(eval_set=eval_set, judge_config=judge_config, agent_version=agent_version),
    )
    decision = evaluate(
        current,
        gating,
        tightening,
        outputs=outputs,
        audits=audits,
        candidate_cells=cells,
        gold=bounds,
        audit_levels=levels,
        audit_waiting=waiting,
    )
    return dataclasses.replace(decision, provenance=sources)


def gate_and_record(
    request: GateRequest, *, workspace: Workspace, source: str, token=None, asked_by=None
) -> GateOutcome:
    """Resolve the names in `workspace`, run the gate, and store the result (also when it cannot decide). The
    command line, the HTTP API and the gate page all call this; `asked_by` is the person on the gate page, `token`
    the API's token (api.GateToken) that asked over HTTP, whose workspace `workspace` must be: the gate answers
    with that workspace's policy only.

    PolicyRefused (a looser threshold than the lead's) propagates and nothing is stored. Over HTTP an
    unknown name is not followed by the names that exist (a token holder learns nothing beyond its scope).
    """
    resolved: dict = {}
    decision, reason = None, ""
    say_known = source != GateResult.Source.HTTP
    try:
        if token is not None and token.workspace_id != workspace.pk:
            raise CannotDecide("this token belongs to another workspace")
        resolved["eval_set"] = eval_set_named(request.eval_set, workspace, say_known=say_known)
        resolved["rubric_version"] = RubricVersion.objects.by_ref(request.rubric, workspace, say_known=say_known)
        resolved["judge_config"] = judge_named(request.judge, workspace, say_known=say_known)
        if token is not None and resolved["rubric_version"].pk != token.rubric_version_id:
            raise CannotDecide(f"this token may only gate on {token.rubric_version.ref}")
        decision = run_gate(**resolved, tightening=request.tightening, agent_version=request.agent_version)
    except (UnknownName, CannotDecide) as exc:
        reason = str(exc)
    if decision is not None and decision.undecided:
        reason = decision.reason  # held back by the candidate's own gold: the criteria are kept with the reason
    record = GateResult.objects.create(
        workspace=workspace,
        decision=(
            GateResult.Decision.UNDECIDED
            if decision is None or decision.undecided
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
