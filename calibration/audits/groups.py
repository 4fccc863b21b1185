"""One audit of every gating criterion of a candidate on one shared sample (issue 37 item 3): starting it, closing
it, finding it.

A group is a plan per criterion (plans.start_plan, unchanged: each keeps its own figures, kept decision and page),
started together in one transaction on the eval set's one audit order, so that one labeled prefix decides them all.
The group stores the levels at the start (PASS at alpha, FAIL at alpha / k; calibration/stats/audit_shared.py),
which is why its criteria are fixed then: a criterion added later would change k. Its shared decision is computed
by a worker (group_figures.py).
"""

from __future__ import annotations

from collections.abc import Sequence

from django.db import transaction
from django.utils import timezone

from calibration.audits import group_figures, stored_figures
from calibration.audits.plans import AuditPlanError, close_plan, refuse_non_lead, start_plan
from calibration.models import AuditPlan, AuditPlanGroup, GatingMark
from calibration.stats.audit_shared import side_levels
from evals.models import Criterion, EvalSet, User
from judging.models import JudgeConfig
from labeling.audit_order import DEFAULT_RELEASE, release_next
from labeling.queue import QueueError, current_queue


def gating_criteria(eval_set: EvalSet, judge_config: JudgeConfig) -> list[GatingMark]:
    """The gating marks a lead may audit together on the candidate with this judge: the current marks of the rubric
    version its open labeling queue is under (every criterion an annotator labels there)."""
    queue = current_queue(eval_set)
    if queue is None:
        return []
    return list(
        GatingMark.objects.for_instrument(queue.rubric_version, judge_config)
        .select_related("criterion")
        .order_by("criterion__order", "criterion__key")
    )


def start_group(
    *,
    criteria: Sequence[Criterion],
    eval_set: EvalSet,
    judge_config: JudgeConfig,
    by: User,
    agent_version: str | None = None,
    seed: int | None = None,
    design: str = AuditPlan.Design.UNIFORM,
) -> AuditPlanGroup:
    """Start one plan per criterion, together, and the group holding their levels; all or nothing.

    Refused (AuditPlanError, nothing written): no criterion, a criterion twice, criteria of two rubric versions,
    and whatever start_plan refuses for any one of them (a criterion that does not gate with the judge, an open plan
    already on it, not a lead, ...), named. Each plan takes its gating mark's minimum; the group's confidence is the
    strictest of the marks' (a plan at a looser one is started at the group's: only stricter is allowed)."""
    refuse_non_lead(by, eval_set)
    keys = [c.key for c in criteria]
    if design != AuditPlan.Design.UNIFORM:
        raise AuditPlanError(
            "An audit of several criteria is uniform for now: a stratified plan releases along its own path, and "
            "releasing every plan's path together is not built yet. Start a uniform one, or a stratified plan alone."
        )
    if not criteria:
        raise AuditPlanError("Choose at least one gating criterion to audit.")
    twice = sorted({key for key in keys if keys.count(key) > 1})
    if twice:
        raise AuditPlanError(f"Each criterion once: {', '.join(twice)} was chosen twice.")
    if len({c.rubric_version_id for c in criteria}) > 1:
        raise AuditPlanError("The criteria must be of one rubric version (the one the candidate's queue labels).")
    marks = {
        m.criterion_id: m
        for m in GatingMark.objects.for_instrument(criteria[0].rubric_version, judge_config).filter(
            criterion__in=criteria
        )
    }
    missing = [c.key for c in criteria if c.pk not in marks]
    if missing:
        raise AuditPlanError(
            f"{', '.join(missing)} of {criteria[0].rubric_version.ref} does not gate with judge {judge_config.name}: "
            "only gating criteria are audited (manage.py approve ... --gating first)."
        )
    confidence = max(marks[c.pk].policy.confidence for c in criteria)
    alpha_pass, alpha_fail = side_levels(confidence=confidence, k=len(criteria))
    with transaction.atomic():
        group = AuditPlanGroup.objects.create(
            eval_set=eval_set,
            judge_config=judge_config,
            agent_version=(agent_version or "").strip(),
            k=len(criteria),
            confidence=confidence,
            alpha_pass=alpha_pass,
            alpha_fail=alpha_fail,
            created_by=by,
        )
        for criterion in criteria:
            try:
                plan = start_plan(
                    criterion=criterion,
                    eval_set=eval_set,
                    judge_config=judge_config,
                    by=by,
                    agent_version=agent_version,
                    seed=seed,
                    confidence=confidence,
                    design=design,
                )
            except AuditPlanError as exc:
                raise AuditPlanError(f"{criterion.key}: {exc}") from exc
            plan.group = group
            plan.save(update_fields=["group"])
        group_figures.request(group)  # its first shared decision, computed by a worker once this commits
    return group


def release_group_next(*, group: AuditPlanGroup, by: User, k: int = DEFAULT_RELEASE) -> int:
    """ "Label these k next" for every criterion at once: the order's next k positions (every plan of a group is
    uniform, so one release of the order is every plan's; audit_shared.next_release). Refused for a closed group
    and for one whose stored shared decision is decided. Returns how many the queue may now hand out."""
    refuse_non_lead(by, group.eval_set)
    if group.closed_at is not None:
        raise AuditPlanError(f"Audit group {group.pk} is closed.")
    figures = group_figures.stored_group(group).figures
    if figures and figures.get("decided"):
        raise AuditPlanError(
            f"Audit group {group.pk} is decided: {group_figures.release_words(figures)} Its labels are no longer "
            "needed; close it to keep it for the record."
        )
    order = group.plans.select_related("order").first().order  # type: ignore[union-attr]  # a group has k >= 1
    try:
        release_next(order=order, k=k)
    except QueueError as exc:
        raise AuditPlanError(str(exc)) from exc
    on_order = list(AuditPlan.objects.open().filter(order=order).values_list("pk", flat=True))
    stored_figures.changed(on_order)
    group_figures.changed(on_order)
    order.refresh_from_db(fields=["released"])
    return order.released


def close_group(*, group: AuditPlanGroup, by: User) -> AuditPlanGroup:
    """Close the group and its plans together (kept for the record): a group is read as one sample or not at all."""
    with transaction.atomic():
        for plan in group.plans.all():
            close_plan(plan=plan, by=by)
        if group.closed_at is None:
            group.closed_at = timezone.now()
            group.save(update_fields=["closed_at"])
    return group


def group_record(group: AuditPlanGroup) -> dict:
    """What a group is, without its figures: names, levels, its plans, who and when."""
    return {
        "group": group.pk,
        "eval_set": group.eval_set.name,
        "judge": group.judge_config.name,
        "agent_version": group.agent_version,
        "k": group.k,
        "confidence": group.confidence,
        "alpha_pass": group.alpha_pass,
        "alpha_fail": group.alpha_fail,
        "plans": {plan.criterion.key: plan.pk for plan in group.plans.all()},
        "created_by": group.created_by.username,
        "created_at": group.created_at.isoformat(),
        "closed_at": group.closed_at.isoformat() if group.closed_at else None,
    }
