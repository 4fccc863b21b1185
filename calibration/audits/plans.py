"""Audit plans: a release decision from gold on a random prefix of the candidate itself (issue 22).

A lead starts a plan for one gating criterion on a candidate eval set (optionally one agent version) and
one judge config. The plan follows the audit order of the eval set's labeling queue (labeling/audit_order.py,
made on the first plan and shared by the later ones), so annotators label the candidate's outputs in one
seeded random order, double-labeled and settled to gold under the criterion's gold policy as always.

`plan_figures` reads everything at query time and hands it to the pure statistics of audit_stats.py: the
pages, the API, the CLI and the gate all show what it returns. The plan stores its parts, and its decision once
first reached (kept.py): from then on that is the plan's decision, and later gold is read beside it.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import asdict, dataclass

import numpy as np
import pandas as pd
from django.db import IntegrityError, transaction
from django.utils import timezone

from calibration.audits import kept
from calibration.data import content_cache, frames
from calibration.data.frame_reading import current_verdicts
from calibration.models import AuditPlan, GatingMark
from calibration.stats import audit_stats, audit_strata
from calibration.stats.metrics import ABSTAIN, FAIL, NOT_APPLICABLE, PASS
from calibration.stats.policy import GateThresholds
from evals.models import Criterion, EvalSet, Output, Role, User
from judging.models import JudgeConfig
from labeling.audit_order import DEFAULT_RELEASE, release_next, release_outputs, start_audit_order
from labeling.gold import derive_gold
from labeling.models import AuditOrder, AuditOrderItem
from labeling.queue import QueueError, current_queue

# Forecasts are Monte Carlo; a fixed seed keeps the figures the same on every read of the same labels.
FORECAST_SIMS = 1000
FORECAST_SEED = 0
# Each simulation may replay the order up to N labels, so on large candidates fewer simulations: about this
# many simulated labels in all, and never fewer than FORECAST_MIN_SIMS (a chance read to within about
# +-3.5 points). 1,000 simulations up to 4,000 outputs, 200 from 20,000 (about 5 s near the minimum).
FORECAST_CELLS = 4_000_000
FORECAST_MIN_SIMS = 200


def forecast_sims(N: int) -> int:
    """The simulations a forecast of a plan of N outputs runs (FORECAST_CELLS)."""
    return max(FORECAST_MIN_SIMS, min(FORECAST_SIMS, FORECAST_CELLS // max(N, 1)))


class AuditPlanError(Exception):
    """An audit plan action that cannot be done; the message says why and what to do, and is shown as is."""


def _refuse_non_lead(by: User) -> None:
    if by.role != Role.LEAD:
        raise AuditPlanError(f"Only a lead may start or extend an audit plan; {by.username} is {by.role}.")


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
) -> AuditPlan:
    """Start an audit plan, making the queue's audit order if it has none (else reusing it, seed and all).

    Needs a lead, the eval set's open labeling queue under the criterion's rubric version, the criterion
    gating with this judge config (a current mark), and an eval set other than the mark's calibration set. A
    stratified plan (`design`) also needs the judge's PASS/FAIL verdicts on the candidate: they split it in two,
    frozen now.
    The thresholds default to the mark's policy and may only be stricter. AuditPlanError otherwise, and
    nothing is written.
    """
    _refuse_non_lead(by)
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
        with transaction.atomic():
            order, _ = start_audit_order(queue=queue, by=by, seed=seed)
            strata = _frozen_strata(order, criterion, judge_config, agent_version) if design == "stratified" else ""
            return AuditPlan.objects.create(
                design=design,
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
    except QueueError as exc:
        raise AuditPlanError(str(exc)) from exc
    except IntegrityError as exc:
        raise AuditPlanError(
            f"{criterion.key} on {eval_set.name}"
            + (f" ({agent_version})" if agent_version else "")
            + f" with {judge_config.name} already has an open audit plan."
        ) from exc


def _population(order_id: int, agent_version: str) -> list[tuple[int, int, str]]:
    """(output id, position, case id) of the plan's outputs in order position: the order's, of the agent version."""
    items = AuditOrderItem.objects.filter(order_id=order_id)
    if agent_version:
        items = items.filter(output__agent_version=agent_version)
    return list(items.order_by("position").values_list("output_id", "position", "output__case__case_id"))


# The largest candidate a stratified plan is offered for: its figures replay every forecast simulation's own tests,
# which takes about 10 s at 2,000 outputs and grows with N (a uniform plan has no limit).
STRATIFIED_MAX_N = 4000


def _frozen_strata(order: AuditOrder, criterion: Criterion, judge_config: JudgeConfig, agent_version: str) -> str:
    """The stratum of each output of the population (one digit, in order position) from the judge's verdicts now:
    0 judged PASS, 1 the rest. Refused without a single PASS or FAIL verdict (there would be nothing to split),
    and above STRATIFIED_MAX_N outputs."""
    population = _population(order.pk, agent_version)
    if len(population) > STRATIFIED_MAX_N:
        raise AuditPlanError(
            f"A stratified audit is offered for candidates of up to {STRATIFIED_MAX_N:,} outputs, and this one has "
            f"{len(population):,}: its forecast would take minutes to read. Start a uniform audit."
        )
    scope = frames.Scope(order.queue.eval_set, criterion.rubric_version, agent_version or None)
    judge = _by_output(current_verdicts(frames.load_verdicts(scope, judge_config)), criterion.pk, "judge")
    verdicts = [_binary(judge.get(output_id)) for output_id, _, _ in population]
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
    _refuse_non_lead(by)
    if plan.closed_at is not None:
        raise AuditPlanError(f"Audit plan {plan.pk} is closed.")
    decided = plan_figures(plan, k=k)
    if decided.decided:
        raise AuditPlanError(decided_words(decided))
    if plan.design == AuditPlan.Design.STRATIFIED:
        _release_stratified(plan, k)
        plan.refresh_from_db(fields=["path"])
        plan.order.refresh_from_db(fields=["released"])
        return plan.order
    try:
        return release_next(order=plan.order, k=k)
    except QueueError as exc:
        raise AuditPlanError(str(exc)) from exc


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
        reading = _stratified_reading(plan)
        if not reading.unreleased:
            raise AuditPlanError(f"Every output of audit plan {plan.pk} is released already.")
        chosen = reading.unreleased[:k]
        plan.path += "".join(str(h) for _, h in chosen)
        plan.save(update_fields=["path"])
        release_outputs(order=plan.order, output_ids=[output_id for output_id, _ in chosen])


def left_to_release(plan: AuditPlan) -> int:
    """How many more outputs "Label these k next" could release for the plan."""
    if plan.design == AuditPlan.Design.STRATIFIED:
        return len(plan.strata) - len(plan.path)
    return plan.order.size - plan.order.released


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


@dataclass(frozen=True)
class _StratifiedReading:
    """A stratified plan's labels as its statistics take them."""

    strata: str
    sizes: tuple[int, int]
    stratum_outputs: tuple[list[int], list[int]]  # each stratum's outputs, in order position
    released: list[int]  # the outputs released by the plan, in release order
    path: np.ndarray  # their strata
    gold_released: list[float]  # their gold now (NaN pending or Can't tell)
    unreleased: list[tuple[int, int]]  # the rest (output, stratum), in order position: the next releases


def _stratified_reading(
    plan: AuditPlan, gold: dict[int, str] | None = None, population: list[tuple[int, int, str]] | None = None
) -> _StratifiedReading:
    """`gold` and `population` when the caller has read them already."""
    population = _population(plan.order_id, plan.agent_version) if population is None else population
    gold = _gold_of(plan) if gold is None else gold
    stratum_outputs: tuple[list[int], list[int]] = ([], [])
    for (output_id, _, _), h in zip(population, plan.strata, strict=True):
        stratum_outputs[int(h)].append(output_id)
    path = np.array([int(h) for h in plan.path], dtype=np.int8)
    taken = [0, 0]
    released = []
    for h in path:
        released.append(stratum_outputs[h][taken[h]])
        taken[h] += 1
    out = set(released)
    unreleased = [(o, int(h)) for (o, _, _), h in zip(population, plan.strata, strict=True) if o not in out]
    return _StratifiedReading(
        strata=plan.strata,
        sizes=(len(stratum_outputs[0]), len(stratum_outputs[1])),
        stratum_outputs=stratum_outputs,
        released=released,
        path=path,
        gold_released=[_gold_value(gold.get(output_id)) for output_id in released],
        unreleased=unreleased,
    )


def _gold_of(plan: AuditPlan, labels: pd.DataFrame | None = None) -> dict[int, str]:
    """The gold of the plan's criterion on the candidate now, by output (`labels`: the scope's, if read already)."""
    criterion = plan.criterion
    scope = frames.Scope(plan.eval_set, criterion.rubric_version, plan.agent_version or None)
    labels = frames.load_labels(scope) if labels is None else labels
    adjudicated = frames.load_adjudicated(scope)
    return _by_output(
        derive_gold(
            labels[labels["criterion"] == criterion.pk],
            adjudicated[adjudicated["criterion"] == criterion.pk],
            {criterion.pk: criterion.gold_policy},
        ),
        criterion.pk,
        "gold",
    )


@dataclass(frozen=True)
class AuditFigures:
    """Everything a page, the API, the CLI or the gate shows of a plan, read now."""

    plan: int
    criterion: str
    eval_set: str
    rubric: str
    judge: str
    agent_version: str
    design: str  # "uniform" or "stratified"
    seed: int
    min_pass_rate: float
    confidence: float
    order: tuple[str, ...]  # case ids of the population, in the plan's order
    N: int
    # Stratified only (else None): the outputs the judge passed and the rest, and the labels in each so far.
    strata_sizes: tuple[int, int] | None
    strata_labeled: tuple[int, int] | None
    released: int  # positions of the population the queue may hand out
    n_labeled: int  # the labeled prefix (pending items in it included)
    n_gold: int
    n_pending: int  # no gold yet, or gold Can't tell, in the labeled prefix: counted against either decision
    n_gold_cant_tell: int  # of n_pending: gold Can't tell (settled, yet no pass or fail to count)
    # Their outputs, in the order: each counts against either decision until a reviewer overrules the Can't tell.
    cant_tell_outputs: tuple[int, ...]
    n_not_applicable: int  # gold N/A: outside the pass rate (passes / (passes + fails), as in the gate)
    estimate: float | None  # the PPI++ estimate of the pass rate (fixed-n; for reading, not deciding)
    lower: float  # the anytime-valid interval: what the decision rests on
    upper: float
    # The plan's decision: the kept one once kept (kept.py), else today's reading. At thresholds other than
    # the plan's (a gate's stricter ones) it is always today's reading at those thresholds.
    decided: str | None  # PASS, FAIL or None (not yet)
    decided_at: int | None  # the label it came at
    decided_by: str | None  # "exact" or "test"
    min_gold: int
    forecast: audit_stats.AuditForecast
    labels_saved: int  # outputs of the population that were not labeled (so far, if undecided)
    outputs_outside_order: int  # outputs of the candidate made after the order: the audit does not cover them
    reads_now: str | None  # today's reading at these thresholds (what `decided` was before decisions were kept)
    kept: kept.KeptDecision | None  # the plan's kept decision against today's gold, once decided

    @property
    def n_settled(self) -> int:
        """Gold items the tests' minimum counts: PASS, FAIL and N/A."""
        return self.n_gold + self.n_not_applicable

    @property
    def n_awaiting_gold(self) -> int:
        """Outputs of the labeled prefix whose gold has yet to come (a second label or an adjudication)."""
        return self.n_pending - self.n_gold_cant_tell

    @property
    def expected_more_labels(self) -> int:
        """The forecast's expected labels to a decision, rounded up (0 once decided)."""
        return int(math.ceil(self.forecast.expected_labels))

    def as_dict(self) -> dict:
        """The JSON of `audit_plan show --format json` and of GET /api/audit-plans/{id}: one dict for both."""
        figures = asdict(self)
        figures["order"] = list(self.order)
        figures["cant_tell_outputs"] = list(self.cant_tell_outputs)
        figures["kept"] = self.kept.as_dict() if self.kept else None
        figures["saved_share"] = self.labels_saved / self.N if self.N else None
        return figures

    def summary(self, *, is_open: bool) -> dict:
        """The plan's figures without its order, as the candidate's calibration report holds them."""
        return {
            "plan": self.plan,
            "criterion": self.criterion,
            "judge": self.judge,
            "agent_version": self.agent_version,
            "open": is_open,
            "min_pass_rate": self.min_pass_rate,
            "confidence": self.confidence,
            "n_labeled": self.n_labeled,
            "N": self.N,
            "estimate": self.estimate,
            "interval": [self.lower, self.upper],
            "decided": self.decided,
            "forecast": asdict(self.forecast),
        }


def decided_words(f: AuditFigures) -> str:
    """Why a decided plan takes no more labels, said the same on the page, the API and the command."""
    return (
        f"Audit plan {f.plan} is decided: {f.decided} at label {f.decided_at} of {f.N}. Its labels are no longer "
        "needed; close it to keep it for the record."
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


def plan_figures(
    plan: AuditPlan, *, k: int = DEFAULT_RELEASE, minimum: float | None = None, confidence: float | None = None
) -> AuditFigures:
    """The plan's figures from the labels and verdicts as they are now; a few queries, whatever N.

    `minimum` and `confidence` override the plan's (the gate decides at its own, never looser, thresholds).
    The population is the order's outputs (of the plan's agent version, if any), in position order. A uniform
    plan's labeled prefix runs to the last released position holding a label or gold of the criterion; a
    stratified plan's labels are the outputs it released, in release order, up to the last one holding either.
    Within them an item without gold is pending (counted against whichever decision it would help;
    audit_stats); gold Can't tell stays pending too, since a pass rate needs PASS or FAIL (a reviewer may settle
    it). Gold N/A leaves the pass rate, which is the gate's: passes / (passes + fails).

    The first read that finds the plan decided at its own thresholds keeps the decision (kept.py); from then
    on `decided` is the kept one, and `kept` says how today's gold reads against it.
    """
    minimum = plan.min_pass_rate if minimum is None else minimum
    confidence = plan.confidence if confidence is None else confidence
    at_plan = (minimum, confidence) == (plan.min_pass_rate, plan.confidence)
    criterion = plan.criterion
    agent_version = plan.agent_version or None
    population = _population(plan.order_id, plan.agent_version)
    outputs = Output.objects.filter(case__eval_set=plan.eval_set)
    if agent_version:
        outputs = outputs.filter(agent_version=agent_version)
    outside = outputs.exclude(audit_positions__order_id=plan.order_id).count()
    scope = frames.Scope(plan.eval_set, criterion.rubric_version, agent_version)
    labels = frames.load_labels(scope)
    gold = _gold_of(plan, labels)
    touched = set(labels.loc[labels["criterion"] == criterion.pk, "output"]) | set(gold)
    ids = [output_id for output_id, _, _ in population]
    sizes: tuple[int, int] | None = None
    counts: tuple[int, int] | None = None
    if plan.design == AuditPlan.Design.STRATIFIED:
        reading = _stratified_reading(plan, gold, population)
        released = len(reading.released)
        n_labeled = max((i + 1 for i, output_id in enumerate(reading.released) if output_id in touched), default=0)
        labeled = reading.released[:n_labeled]
        path = reading.path[:n_labeled]
        gold_values = reading.gold_released[:n_labeled]
        sizes = reading.sizes
        counts = (int(np.sum(path == 0)), int(np.sum(path == 1)))
        # The labels still to come, in the order the test will count them: the released ones not labeled yet, then
        # the rest in order position (what the next releases will be).
        ahead = reading.path[n_labeled:].tolist() + [h for _, h in reading.unreleased]
        decision, forecast = content_cache.computed(
            "audit-stratified",
            (gold_values, path.tolist(), ahead, sizes, minimum, confidence, k, FORECAST_SEED),
            lambda: _stratified_statistics(
                gold_values, path, ahead, sizes, minimum=minimum, confidence=confidence, k=k
            ),
        )

        def at_plans_thresholds() -> audit_stats.AuditDecision:
            return audit_strata.stratified_decision(
                gold=gold_values, path=path, sizes=sizes, minimum=plan.min_pass_rate, confidence=plan.confidence
            )
    else:
        order_released = AuditOrder.objects.filter(pk=plan.order_id).values_list("released", flat=True).get()
        open_positions = [i for i, (_, position, _) in enumerate(population) if position <= order_released]
        released = len(open_positions)
        n_labeled = max((i + 1 for i in open_positions if ids[i] in touched), default=0)
        labeled = ids[:n_labeled]
        judge = _by_output(current_verdicts(frames.load_verdicts(scope, plan.judge_config)), criterion.pk, "judge")
        verdict_values = [_binary(judge.get(output_id)) for output_id in ids]
        gold_values = [_gold_value(gold.get(output_id)) for output_id in labeled]
        # The plan page re-reads these every few seconds while labels arrive slowly, and on a large candidate near
        # its minimum the forecast runs for seconds: computed once per gold, verdicts and thresholds.
        decision, forecast = content_cache.computed(
            "audit",
            (gold_values, verdict_values, minimum, confidence, k, forecast_sims(len(ids)), FORECAST_SEED),
            lambda: _statistics(gold_values, verdict_values, minimum=minimum, confidence=confidence, k=k),
        )

        def at_plans_thresholds() -> audit_stats.AuditDecision:
            return audit_stats.audit_decision(
                gold=gold_values, verdicts=verdict_values, minimum=plan.min_pass_rate, confidence=plan.confidence
            )

    kept = _kept(plan, decision if at_plan else None, at_plans_thresholds, labeled, gold)
    shown = kept if kept is not None and at_plan else None
    cant_tell = tuple(output_id for output_id in labeled if gold.get(output_id) == ABSTAIN)
    return AuditFigures(
        plan=plan.pk,
        criterion=criterion.key,
        eval_set=plan.eval_set.name,
        rubric=criterion.rubric_version.ref,
        judge=plan.judge_config.name,
        agent_version=plan.agent_version,
        design=plan.design,
        seed=plan.order.seed,
        min_pass_rate=minimum,
        confidence=confidence,
        order=tuple(case_id for _, _, case_id in population),
        N=len(population),
        strata_sizes=sizes,
        strata_labeled=counts,
        released=released,
        n_labeled=n_labeled,
        n_gold=decision.n_gold,
        n_pending=decision.n_pending,
        n_gold_cant_tell=len(cant_tell),
        cant_tell_outputs=cant_tell,
        n_not_applicable=decision.n_not_applicable,
        estimate=decision.estimate.estimate,
        lower=decision.lower,
        upper=decision.upper,
        decided=shown.decided if shown else decision.decided,
        decided_at=shown.at_label if shown else decision.decided_at,
        decided_by=shown.decided_by if shown else decision.decided_by,
        min_gold=decision.min_gold,
        forecast=forecast,
        labels_saved=len(population) - n_labeled,
        outputs_outside_order=outside,
        reads_now=decision.decided,
        kept=kept,
    )


def _kept(
    plan: AuditPlan,
    decision: audit_stats.AuditDecision | None,
    at_plans_thresholds: Callable[[], audit_stats.AuditDecision],
    labeled: list[int],
    gold: dict[int, str],
) -> kept.KeptDecision | None:
    """The plan's kept decision read against today's gold, keeping `decision` (read at the plan's thresholds, None
    at others) if it decides and none is kept yet. Today's reading at the plan's thresholds is `decision`'s, or
    computed (without a forecast) where the figures were asked at other thresholds."""
    row = kept.stored(plan)
    if row is None:
        if decision is None or decision.decided is None:
            return None
        row = kept.keep(plan, decision, kept.gold_pairs(labeled, gold))
    reads_now = decision.decided if decision is not None else at_plans_thresholds().decided
    return kept.read(row, gold, reads_now)


# A stratified forecast replays every simulation with its own tests: fewer simulations than a uniform one's, and
# fewer still on large candidates (200 up to 2,000 outputs, then about 400,000 / N, at least 50).
STRATIFIED_FORECAST_SIMS = 200


def stratified_forecast_sims(N: int) -> int:
    return max(50, min(STRATIFIED_FORECAST_SIMS, 400_000 // max(N, 1)))


def _stratified_statistics(
    gold: list[float],
    path: np.ndarray,
    ahead: list[int],
    sizes: tuple[int, int],
    *,
    minimum: float,
    confidence: float,
    k: int,
) -> tuple[audit_stats.AuditDecision, audit_stats.AuditForecast]:
    decision = audit_strata.stratified_decision(
        gold=gold, path=path, sizes=sizes, minimum=minimum, confidence=confidence
    )
    if decision.decided:
        return decision, audit_stats.AuditForecast.settled(
            k=k, decided=decision.decided, n_sims=stratified_forecast_sims(sizes[0] + sizes[1])
        )
    forecast = audit_strata.stratified_forecast(
        gold=gold,
        path=path,
        ahead=ahead,
        sizes=sizes,
        minimum=minimum,
        confidence=confidence,
        k=k,
        n_sims=stratified_forecast_sims(sizes[0] + sizes[1]),
        seed=FORECAST_SEED,
    )
    return decision, forecast


def _statistics(
    gold: list[float], verdicts: list[float], *, minimum: float, confidence: float, k: int
) -> tuple[audit_stats.AuditDecision, audit_stats.AuditForecast]:
    decision = audit_stats.audit_decision(gold=gold, verdicts=verdicts, minimum=minimum, confidence=confidence)
    forecast = audit_stats.audit_forecast(
        gold=gold,
        verdicts=verdicts,
        minimum=minimum,
        confidence=confidence,
        k=k,
        n_sims=forecast_sims(len(verdicts)),
        seed=FORECAST_SEED,
    )
    return decision, forecast


def _by_output(frame: pd.DataFrame, criterion_id: int, column: str) -> dict[int, str]:
    rows = frame[frame["criterion"] == criterion_id]
    return dict(zip(rows["output"].astype("int64"), rows[column], strict=True))


def _binary(outcome: str | None) -> float:
    """A verdict: 1 for PASS, 0 for FAIL, NaN for anything else (ERROR, ABSTAIN, N/A: no usable verdict)."""
    return 1.0 if outcome == PASS else 0.0 if outcome == FAIL else np.nan


def _gold_value(outcome: str | None) -> float:
    """Gold: 1 PASS, 0 FAIL, audit_stats.NOT_APPLICABLE for N/A (outside the pass rate, as in the gate), NaN
    while it is pending or Can't tell (a pass rate needs PASS or FAIL; a reviewer may settle it)."""
    if outcome == NOT_APPLICABLE:
        return audit_stats.NOT_APPLICABLE
    return _binary(outcome)


def close_plan(*, plan: AuditPlan, by: User) -> AuditPlan:
    """Close a plan (kept for the record); another may then be started for the same criterion and candidate."""
    _refuse_non_lead(by)
    if plan.closed_at is None:
        plan.closed_at = timezone.now()
        plan.save(update_fields=["closed_at"])
    return plan
