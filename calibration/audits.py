"""Audit plans: a release decision from gold on a random prefix of the candidate itself (issue 22).

A lead starts a plan for one gating criterion on a candidate eval set (optionally one agent version) and
one judge config. The plan follows the audit order of the eval set's labeling queue (labeling/audit_order.py,
made on the first plan and shared by the later ones), so annotators label the candidate's outputs in one
seeded random order, double-labeled and settled to gold under the criterion's gold policy as always.

`plan_figures` reads everything at query time and hands it to the pure statistics of audit_stats.py: the
pages, the API, the CLI and the gate all show what it returns. The plan stores only its parts.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass

import numpy as np
import pandas as pd
from django.db import IntegrityError, transaction
from django.utils import timezone

from evals.models import Criterion, EvalSet, Output, Role, User
from judging.models import JudgeConfig
from labeling.audit_order import DEFAULT_RELEASE, release_next, start_audit_order
from labeling.gold import derive_gold
from labeling.models import AuditOrder, AuditOrderItem
from labeling.queue import QueueError, current_queue

from . import audit_stats, content_cache
from . import frames as data
from .frame_reading import current_verdicts
from .metrics import ABSTAIN, FAIL, NOT_APPLICABLE, PASS
from .models import AuditPlan, GatingMark
from .policy import GateThresholds

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
) -> AuditPlan:
    """Start an audit plan, making the queue's audit order if it has none (else reusing it, seed and all).

    Needs a lead, the eval set's open labeling queue under the criterion's rubric version, the criterion
    gating with this judge config (a current mark), and an eval set other than the mark's calibration set.
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
    try:
        with transaction.atomic():
            order, _ = start_audit_order(queue=queue, by=by, seed=seed)
            return AuditPlan.objects.create(
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
    try:
        return release_next(order=plan.order, k=k)
    except QueueError as exc:
        raise AuditPlanError(str(exc)) from exc


@dataclass(frozen=True)
class AuditFigures:
    """Everything a page, the API, the CLI or the gate shows of a plan, read now."""

    plan: int
    criterion: str
    eval_set: str
    rubric: str
    judge: str
    agent_version: str
    seed: int
    min_pass_rate: float
    confidence: float
    order: tuple[str, ...]  # case ids of the population, in the plan's order
    N: int
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
    decided: str | None  # PASS, FAIL or None (not yet)
    decided_at: int | None
    decided_by: str | None  # "exact" or "test"
    min_gold: int
    forecast: audit_stats.AuditForecast
    labels_saved: int  # outputs of the population that were not labeled (so far, if undecided)
    outputs_outside_order: int  # outputs of the candidate made after the order: the audit does not cover them

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
        .select_related("criterion__rubric_version__rubric", "eval_set", "judge_config", "order")
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
        .select_related("criterion__rubric_version__rubric", "eval_set", "judge_config", "order")
        .first()
    )


def plan_figures(
    plan: AuditPlan, *, k: int = DEFAULT_RELEASE, minimum: float | None = None, confidence: float | None = None
) -> AuditFigures:
    """The plan's figures from the labels and verdicts as they are now; six queries, whatever N.

    `minimum` and `confidence` override the plan's (the gate decides at its own, never looser, thresholds).
    The population is the order's outputs (of the plan's agent version, if any), in position order. The
    labeled prefix runs to the last released position holding a label or gold of the criterion: within
    it an item without gold is pending (counted against whichever decision it would help; audit_stats);
    gold Can't tell stays pending too, since a pass rate needs PASS or FAIL (a reviewer may settle it). Gold
    N/A leaves the pass rate, which is the gate's: passes / (passes + fails).
    """
    minimum = plan.min_pass_rate if minimum is None else minimum
    confidence = plan.confidence if confidence is None else confidence
    criterion = plan.criterion
    agent_version = plan.agent_version or None
    released = AuditOrder.objects.filter(pk=plan.order_id).values_list("released", flat=True).get()
    items = AuditOrderItem.objects.filter(order_id=plan.order_id)
    outputs = Output.objects.filter(case__eval_set=plan.eval_set)
    if agent_version:
        items = items.filter(output__agent_version=agent_version)
        outputs = outputs.filter(agent_version=agent_version)
    population = list(items.order_by("position").values_list("output_id", "position", "output__case__case_id"))
    outside = outputs.exclude(audit_positions__order_id=plan.order_id).count()
    scope = data.Scope(plan.eval_set, criterion.rubric_version, agent_version)
    verdicts = current_verdicts(data.load_verdicts(scope, plan.judge_config))
    labels = data.load_labels(scope)
    adjudicated = data.load_adjudicated(scope)
    ids = [output_id for output_id, _, _ in population]
    judge = _by_output(verdicts, criterion.pk, "judge")
    gold = _by_output(
        derive_gold(
            labels[labels["criterion"] == criterion.pk],
            adjudicated[adjudicated["criterion"] == criterion.pk],
            {criterion.pk: criterion.gold_policy},
        ),
        criterion.pk,
        "gold",
    )
    touched = set(labels.loc[labels["criterion"] == criterion.pk, "output"]) | set(gold)
    open_positions = [i for i, (output_id, position, _) in enumerate(population) if position <= released]
    n_labeled = max((i + 1 for i in open_positions if ids[i] in touched), default=0)
    verdict_values = [_binary(judge.get(output_id)) for output_id in ids]
    gold_values = [_gold_value(gold.get(output_id)) for output_id in ids[:n_labeled]]
    cant_tell = tuple(output_id for output_id in ids[:n_labeled] if gold.get(output_id) == ABSTAIN)
    # The plan page re-reads these every few seconds while labels arrive slowly, and on a large candidate near
    # its minimum the forecast runs for seconds: computed once per gold, verdicts and thresholds.
    decision, forecast = content_cache.computed(
        "audit",
        (gold_values, verdict_values, minimum, confidence, k, forecast_sims(len(ids)), FORECAST_SEED),
        lambda: _statistics(gold_values, verdict_values, minimum=minimum, confidence=confidence, k=k),
    )
    return AuditFigures(
        plan=plan.pk,
        criterion=criterion.key,
        eval_set=plan.eval_set.name,
        rubric=criterion.rubric_version.ref,
        judge=plan.judge_config.name,
        agent_version=plan.agent_version,
        seed=plan.order.seed,
        min_pass_rate=minimum,
        confidence=confidence,
        order=tuple(case_id for _, _, case_id in population),
        N=len(population),
        released=len(open_positions),
        n_labeled=n_labeled,
        n_gold=decision.n_gold,
        n_pending=decision.n_pending,
        n_gold_cant_tell=len(cant_tell),
        cant_tell_outputs=cant_tell,
        n_not_applicable=decision.n_not_applicable,
        estimate=decision.estimate.estimate,
        lower=decision.lower,
        upper=decision.upper,
        decided=decision.decided,
        decided_at=decision.decided_at,
        decided_by=decision.decided_by,
        min_gold=decision.min_gold,
        forecast=forecast,
        labels_saved=len(population) - n_labeled,
        outputs_outside_order=outside,
    )


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
