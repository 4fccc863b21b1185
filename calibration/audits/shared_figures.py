"""The release decision of a candidate's open audit plans read as one shared sample (issue 37 item 3): a seam for
the product: an audit plan group's worker stores it (group_figures.py).

Plans on one eval set already share its audit order (labeling/audit_order.py), and since issue 41 every plan
releases the order's prefix, so the open plans of a candidate's gating criteria (one per criterion) are one sample
labeled on every criterion. `shared_reading` reads each plan's gold and its judge's verdicts on that order, as
figures.py does for a plan alone, and hands them to calibration/stats/audit_shared.py, which decides each
criterion's PASS at alpha and its FAIL at alpha / k, and their conjunction. The confidence is the strictest of the
plans' (a caller may only tighten it).
"""

from __future__ import annotations

from collections.abc import Sequence

from calibration.audits.plan_outputs import by_output, gold_of, gold_value, population_of, verdict_value
from calibration.data import frames
from calibration.data.frame_reading import current_verdicts
from calibration.models import AuditPlan
from calibration.stats.audit_shared import CriterionAudit, SharedDecision, shared_decision
from labeling import label_frames
from labeling.models import AuditOrder, AuditOrderItem


class SharedReadingError(ValueError):
    """Plans that cannot be read as one sample, said in words."""


def _check(plans: Sequence[AuditPlan]) -> None:
    if not plans:
        raise SharedReadingError("A shared reading needs at least one audit plan.")
    first = plans[0]
    for plan in plans:
        if plan.closed_at is not None:
            raise SharedReadingError(f"Audit plan {plan.pk} is closed.")
        if (plan.order_id, plan.agent_version) != (first.order_id, first.agent_version):
            raise SharedReadingError(
                f"Audit plans {first.pk} and {plan.pk} read different orders or agent versions: not one sample."
            )
    criteria = [plan.criterion_id for plan in plans]
    if len(set(criteria)) != len(criteria):
        raise SharedReadingError("One plan per criterion: two plans audit the same criterion.")


def _criterion_audit(plan: AuditPlan, ids: list[int], released: int) -> CriterionAudit:
    """The plan's criterion on the shared order: its gold on its labeled prefix (to the last released output holding
    a label or gold of it) and its judge's verdicts on every output."""
    criterion = plan.criterion
    scope = label_frames.Scope(plan.eval_set, criterion.rubric_version, plan.agent_version or None)
    labels = label_frames.load_labels(scope)
    gold = gold_of(plan, labels)
    touched = set(labels.loc[labels["criterion"] == criterion.pk, "output"]) | set(gold)
    n_labeled = max((i + 1 for i in range(released) if ids[i] in touched), default=0)
    judge = by_output(current_verdicts(frames.load_verdicts(scope, plan.judge_config)), criterion.pk, "judge")
    stratified = plan.design == AuditPlan.Design.STRATIFIED
    if stratified and plan.path != plan.strata[: len(plan.path)]:
        raise SharedReadingError(
            f"Audit plan {plan.pk} released outputs out of the order (its releases chose strata, before issue 41): "
            "its labels are not the order's prefix. Close it and start a new plan on the same order."
        )
    return CriterionAudit(
        key=criterion.key,
        verdicts=[verdict_value(judge.get(output_id)) for output_id in ids],
        gold=[gold_value(gold.get(output_id)) for output_id in ids[:n_labeled]],
        minimum=plan.min_pass_rate,
        design=plan.design,
        strata=[int(h) for h in plan.strata] if stratified else None,
    )


def shared_reading(plans: Sequence[AuditPlan], *, confidence: float | None = None) -> SharedDecision:
    """The release's decision now from the open plans of one candidate's gating criteria, one sample for all, at
    `confidence` (a group's stored one; by default the strictest of the plans')."""
    _check(plans)
    first = plans[0]
    population = population_of(first.order_id, first.agent_version)
    ids = [output_id for output_id, _, _ in population]
    order_released = AuditOrder.objects.filter(pk=first.order_id).values_list("released", flat=True).get()
    # The order's first `released` positions, and the outputs a stratified plan released (the order's next ones
    # since issue 41): the shared prefix runs to the first position neither released.
    flagged = set(
        AuditOrderItem.objects.filter(order_id=first.order_id, released=True).values_list("output_id", flat=True)
    )
    open_ = [position <= order_released or output_id in flagged for output_id, position, _ in population]
    released = open_.index(False) if False in open_ else len(open_)
    criteria = [_criterion_audit(plan, ids, released) for plan in plans]
    strictest = max(plan.confidence for plan in plans)
    return shared_decision(
        criteria=criteria, confidence=strictest if confidence is None else max(confidence, strictest)
    )
