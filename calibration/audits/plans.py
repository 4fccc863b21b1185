"""Audit plans: a release decision from gold on a random prefix of the candidate itself (issue 22).

A lead starts a plan for one gating criterion on a candidate eval set (optionally one agent version) and
one judge config. The plan follows the audit order of the eval set's labeling queue (labeling/audit_order.py,
made on the first plan and shared by the later ones), so annotators label the candidate's outputs in one
seeded random order, double-labeled and settled to gold under the criterion's gold policy as always.

Here a plan is started, released ("label these k next") and closed, and found (`open_plan_for`,
`plans_to_report`). Its figures are read in figures.py, from its outputs and their gold (plan_outputs.py).
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from django.db import IntegrityError, transaction
from django.utils import timezone

from calibration.audits import group_figures, plan_signals, stored_figures
from calibration.audits.figures import decided_words
from calibration.audits.plan_outputs import by_output, population_of, stratified_reading, verdict_value
from calibration.data import frames
from calibration.data.frame_reading import current_verdicts
from calibration.models import AuditPlan, GatingMark
from calibration.stats import audit_strata
from calibration.stats.policy import GateThresholds
from evals.models import Criterion, EvalSet, Output, Role, User
from judging.models import JudgeConfig
from labeling import label_frames
from labeling.audit_order import DEFAULT_RELEASE, release_next, release_outputs, start_audit_order
from labeling.models import AuditOrder
from labeling.queue import QueueError, current_queue


class AuditPlanError(Exception):
    """An audit plan action that cannot be done; the message says why and what to do, and is shown as is."""


def refuse_non_lead(by: User, eval_set: EvalSet) -> None:
    role = by.role_in(eval_set.workspace_id)
    if role != Role.LEAD:
        held = f"is {role} there" if role else "is not a member of it"
        raise AuditPlanError(
            f"Only a lead of the eval set's workspace may start, extend or close an audit plan; {by.username} {held}."
        )


def start_plan(
    *,
    criterion: Criterion,
    eval_set: EvalSet,
    judge_config: JudgeConfig,
    by: User,
    agent_version: str | None = None,
    seed: int | None = None,
    min_pass_rate: float | None = None,
    confidence: float | None = None,
    design: str = AuditPlan.Design.UNIFORM,
    extra_judges: Sequence[JudgeConfig] = (),
) -> AuditPlan:
    """Start an audit plan, making the queue's audit order if it has none (else reusing it, seed and all).

    Needs a lead, the eval set's open labeling queue under the criterion's rubric version, the criterion
    gating with this judge config (a current mark), and an eval set other than the mark's calibration set. A
    stratified plan (`design`) also needs the judge's PASS/FAIL verdicts on the candidate: they split it in two,
    frozen now. A uniform plan reads the jury predictor (issue 38): the vote share of its judge's samples and of each
    of `extra_judges` (configs with verdicts of the criterion on the candidate), frozen now (plan_signals.py).
    The thresholds default to the mark's policy and may only be stricter. AuditPlanError otherwise, and
    nothing is written.
    """
    refuse_non_lead(by, eval_set)
    if criterion.rubric_version.rubric.workspace_id != eval_set.workspace_id or judge_config.workspace_id != (
        eval_set.workspace_id
    ):
        raise AuditPlanError("The criterion, eval set and judge config must all be of one workspace.")
    rubric_version = criterion.rubric_version
    queue = current_queue(eval_set)
    if queue is None or queue.rubric_version_id != rubric_version.pk:
        where = f"is under {queue.rubric_version.ref}" if queue else "is not open"
        raise AuditPlanError(
            f"The labeling queue of {eval_set.name} {where}: open it under {rubric_version.ref} on the Queues page "
            "first, so the audit's labels are made under the criterion's rubric version."
        )
    mark = (
        GatingMark.objects.for_instrument(rubric_version, judge_config)
        .filter(criterion=criterion)
        .select_related("calibration_eval_set")
        .first()
    )
    if mark is None:
        raise AuditPlanError(
            f"{criterion.key} of {rubric_version.ref} does not gate with judge {judge_config.name}: a lead marks it "
            "gating on a calibration first (manage.py approve ... --gating)."
        )
    if mark.calibration_eval_set_id == eval_set.pk:
        raise AuditPlanError(
            f"{eval_set.name} is the calibration set of {criterion.key}'s gating mark: an audit is of a release "
            "candidate, another eval set."
        )
    agent_version = (agent_version or "").strip()
    outputs = Output.objects.filter(case__eval_set=eval_set)
    if agent_version and not outputs.filter(agent_version=agent_version).exists():
        raise AuditPlanError(f"{eval_set.name} has no outputs of agent version {agent_version!r}.")
    thresholds = _thresholds(mark, min_pass_rate, confidence)
    if design not in AuditPlan.Design.values:
        raise AuditPlanError(f"The design is one of {', '.join(AuditPlan.Design.values)}, not {design!r}.")
    try:
        extra = plan_signals.checked_extra_judges(
            extra_judges,
            judge_config=judge_config,
            criterion=criterion,
            eval_set=eval_set,
            agent_version=agent_version,
            design=design,
        )
    except plan_signals.SignalError as exc:
        raise AuditPlanError(str(exc)) from exc
    uniform = design == AuditPlan.Design.UNIFORM
    try:
        with transaction.atomic():
            order, _ = start_audit_order(queue=queue, by=by, seed=seed)
            strata = _frozen_strata(order, criterion, judge_config, agent_version) if design == "stratified" else ""
            plan = AuditPlan.objects.create(
                design=design,
                predictor=AuditPlan.Predictor.JURY if uniform else AuditPlan.Predictor.VERDICT,
                strata=strata,
                criterion=criterion,
                eval_set=eval_set,
                judge_config=judge_config,
                agent_version=agent_version,
                order=order,
                min_pass_rate=thresholds.min_pass_rate,
                confidence=thresholds.confidence,
                created_by=by,
            )
            if uniform:
                plan_signals.freeze(plan, extra)  # before the first label, as the seed
            stored_figures.request(plan)  # its first figures, computed by a worker once this commits
            return plan
    except QueueError as exc:
        raise AuditPlanError(str(exc)) from exc
    except IntegrityError as exc:
        raise AuditPlanError(
            f"{criterion.key} on {eval_set.name}"
            + (f" ({agent_version})" if agent_version else "")
            + f" with {judge_config.name} already has an open audit plan."
        ) from exc


def _frozen_strata(order: AuditOrder, criterion: Criterion, judge_config: JudgeConfig, agent_version: str) -> str:
    """The stratum of each output of the population (one digit, in order position) from the judge's verdicts now:
    0 judged PASS, 1 the rest. Refused without a single PASS or FAIL verdict (there would be nothing to split).
    Any size: the figures cost the labels and the strata's pairs, not N (calibration/stats/strata_walk.py)."""
    population = population_of(order.pk, agent_version)
    scope = label_frames.Scope(order.queue.eval_set, criterion.rubric_version, agent_version or None)
    judge = by_output(current_verdicts(frames.load_verdicts(scope, judge_config)), criterion.pk, "judge")
    verdicts = [verdict_value(judge.get(output_id)) for output_id, _, _ in population]
    if all(math.isnan(v) for v in verdicts):
        raise AuditPlanError(
            f"A stratified audit splits the candidate by the judge's verdicts, and {judge_config.name} has no PASS or "
            f"FAIL verdict on {criterion.key} there: run the judge on {order.queue.eval_set.name} first, or start a "
            "uniform audit."
        )
    return "".join(str(int(h)) for h in audit_strata.strata_of(verdicts))


def _thresholds(mark: GatingMark, min_pass_rate: float | None, confidence: float | None) -> GateThresholds:
    """The plan's thresholds: the mark's, or stricter ones the lead asked for."""
    policy = mark.policy
    asked_min = policy.min_pass_rate if min_pass_rate is None else min_pass_rate
    asked_conf = policy.confidence if confidence is None else confidence
    try:
        thresholds = GateThresholds(asked_min, policy.max_error_rate, asked_conf, policy.decide_on)
    except ValueError as exc:
        raise AuditPlanError(str(exc)) from exc
    if thresholds.min_pass_rate < policy.min_pass_rate or thresholds.confidence < policy.confidence:
        raise AuditPlanError(
            f"the plan's min pass rate {thresholds.min_pass_rate:g} and confidence {thresholds.confidence:g} may not "
            f"be looser than the gating mark's ({policy.min_pass_rate:g} at {policy.confidence:g})"
        )
    return thresholds


def release_plan_next(*, plan: AuditPlan, by: User, k: int = DEFAULT_RELEASE) -> AuditOrder:
    """ "Label these k next": the queue may hand out k more positions of the plan's order.

    Refused for a closed plan, and for a decided one: its decision stands whatever the next labels say, so
    releasing more would only spend annotators' time (another plan on the same order releases for itself).
    """
    refuse_non_lead(by, plan.eval_set)
    if plan.closed_at is not None:
        raise AuditPlanError(f"Audit plan {plan.pk} is closed.")
    # The figures a worker stored (no web request computes a decision, issue 37): while they are behind, a plan that
    # the newest label decided may still release once more, which costs labels, never validity.
    figures = stored_figures.stored_for(plan).figures
    if figures is not None and figures.decided:
        raise AuditPlanError(decided_words(figures))
    if plan.design == AuditPlan.Design.STRATIFIED:
        _release_stratified(plan, k)
        plan.refresh_from_db(fields=["path"])
        plan.order.refresh_from_db(fields=["released"])
    else:
        try:
            release_next(order=plan.order, k=k)
        except QueueError as exc:
            raise AuditPlanError(str(exc)) from exc
    # The released count is part of the figures' state; every open plan on the order reads it.
    on_order = list(AuditPlan.objects.open().filter(order=plan.order).values_list("pk", flat=True))
    stored_figures.changed(on_order)
    group_figures.changed(on_order)
    return plan.order


def _release_stratified(plan: AuditPlan, k: int) -> None:
    """Release the plan's next k outputs in the order, whatever their strata and whatever the labels say, and
    record their strata in the plan's path (the order its test counts them in).

    What annotators are handed must carry no signal of the judge's verdict (they are blind to it so that gold does
    not anchor on it): a release chosen from the labels would be one stratum's, and tell them the verdict. The
    order's next outputs are a uniformly random sample drawn before any verdict was read, so they tell nothing a
    uniform plan's would not. (A plan started before releases were blind holds each stratum's first outputs in the
    order; its next ones are still the lowest positions it has not released, so that stays true of it.)"""
    if k < 1:
        raise AuditPlanError(f"Release at least one more output, not {k}.")
    with transaction.atomic():
        plan = AuditPlan.objects.select_for_update().select_related("criterion__rubric_version").get(pk=plan.pk)
        reading = stratified_reading(plan)
        if not reading.unreleased:
            raise AuditPlanError(f"Every output of audit plan {plan.pk} is released already.")
        chosen = reading.unreleased[:k]
        plan.path += "".join(str(h) for _, h in chosen)
        plan.save(update_fields=["path"])
        release_outputs(order=plan.order, output_ids=[output_id for output_id, _ in chosen])


def left_to_release(plan: AuditPlan) -> int:
    """How many more outputs "Label these k next" could release for the plan."""
    released, size = plan.released_of
    return size - released


def released_words(plan: AuditPlan) -> str:
    """What the queue may hand out now, said the same on the page and by the command."""
    if plan.design != AuditPlan.Design.STRATIFIED:
        return f"The labeling queue may now hand out the first {plan.order.released} of {plan.order.size} outputs."
    sizes = (plan.strata.count("0"), plan.strata.count("1"))
    taken = (plan.path.count("0"), plan.path.count("1"))
    return (
        f"The labeling queue may now hand out {len(plan.path)} of the plan's {len(plan.strata)} outputs: "
        f"{taken[0]} of the {sizes[0]} the judge passed, {taken[1]} of the {sizes[1]} others."
    )


def plan_record(plan: AuditPlan) -> dict:
    """What a plan is, without its figures (the API's list and close): names, thresholds, who and when."""
    return {
        "plan": plan.pk,
        "eval_set": plan.eval_set.name,
        "criterion": plan.criterion.key,
        "rubric": plan.criterion.rubric_version.ref,
        "judge": plan.judge_config.name,
        "agent_version": plan.agent_version,
        "design": plan.design,
        "predictor": plan.predictor,
        "also_judges": plan_signals.also_judges(plan),
        "min_pass_rate": plan.min_pass_rate,
        "confidence": plan.confidence,
        "created_by": plan.created_by.username,
        "created_at": plan.created_at.isoformat(),
        "closed_at": plan.closed_at.isoformat() if plan.closed_at else None,
    }


def plans_to_report(*, eval_set: EvalSet, rubric_version_id: int) -> list[AuditPlan]:
    """The plans a candidate's calibration report shows: every open one on the eval set under the rubric version,
    and per criterion, judge config and agent version the latest closed one (what the last audit found)."""
    plans = (
        AuditPlan.objects.filter(eval_set=eval_set, criterion__rubric_version_id=rubric_version_id)
        .for_figures()
        .order_by("criterion__order", "criterion_id", "judge_config__name", "agent_version", "-created_at", "-id")
    )
    shown: list[AuditPlan] = []
    closed_seen: set[tuple] = set()
    for plan in plans:
        audit = (plan.criterion_id, plan.judge_config_id, plan.agent_version)
        if plan.closed_at is None:
            shown.append(plan)
        elif audit not in closed_seen:
            shown.append(plan)
            closed_seen.add(audit)
    return shown


def open_plan_for(
    *, criterion_id: int, eval_set: EvalSet, judge_config: JudgeConfig, agent_version: str | None
) -> AuditPlan | None:
    return (
        AuditPlan.objects.open()
        .filter(
            criterion_id=criterion_id,
            eval_set=eval_set,
            judge_config=judge_config,
            agent_version=agent_version or "",
        )
        .for_figures()
        .first()
    )


def close_plan(*, plan: AuditPlan, by: User) -> AuditPlan:
    """Close a plan (kept for the record); another may then be started for the same criterion and candidate."""
    refuse_non_lead(by, plan.eval_set)
    if plan.closed_at is None:
        plan.closed_at = timezone.now()
        plan.save(update_fields=["closed_at"])
    return plan
