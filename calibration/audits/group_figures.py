"""A group's shared decision computed in a Celery worker and stored with the gold state it reflects (issue 37 item
3), as stored_figures.py does for one plan: asked for after a change to any of its plans' gold or labels, a release,
or its start; computed once per group at a time under a PostgreSQL advisory lock (its own lock space), the latest
change winning; written by one UPDATE, so a worker killed mid-computation leaves the previous figures whole.

What is stored (`shared_dict`) is calibration/stats/audit_shared.py's SharedDecision read on the group's plans
(shared_figures.shared_reading) at the levels the group stored at its start: the release's decision, the label it
came at and the criterion it came from, the open criteria, and per criterion its decision with its lower bound at
alpha and its upper bound at alpha / k. Pages, the CLI and the API read it (`stored_group`); none computes it.
"""

from __future__ import annotations

import time
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime
from functools import partial

from django.db.models import F
from django.db.models.functions import Greatest
from django.utils import timezone

from calibration.audits import stored_figures
from calibration.audits.figures import read_plan
from calibration.audits.shared_figures import SharedReadingError, shared_reading
from calibration.data import content_cache, worker_figures
from calibration.models import AuditPlan, AuditPlanGroup
from calibration.stats.audit_shared import SharedDecision

# The Celery task's name (calibration/tasks.py registers it).
TASK = "recompute-group-figures"
# The advisory lock's first key: not the plans' (stored_figures.LOCK_SPACE), so a group's id never meets a row's.
LOCK_SPACE = 37_002


def send(group_id: int) -> None:
    from celery import current_app

    current_app.send_task(TASK, args=[group_id])


def request(group: AuditPlanGroup) -> None:
    """Ask for the group's shared decision again once this transaction commits."""
    AuditPlanGroup.objects.filter(pk=group.pk).update(wanted=F("wanted") + 1, requested_at=timezone.now())
    stored_figures.after_commit(partial(send, group.pk))


def changed(plan_ids: Iterable[int]) -> None:
    """These plans' gold, labels or releases changed (committed): their open groups are behind."""
    ids = sorted(set(plan_ids))
    if not ids:
        return
    groups = list(
        AuditPlanGroup.objects.filter(plans__in=ids, closed_at__isnull=True).values_list("pk", flat=True).distinct()
    )
    if not groups:
        return
    AuditPlanGroup.objects.filter(pk__in=groups).update(wanted=F("wanted") + 1, requested_at=timezone.now())
    for group_id in groups:
        stored_figures.after_commit(partial(send, group_id))


def _plans(group: AuditPlanGroup) -> list[AuditPlan]:
    return list(group.plans.for_figures().order_by("criterion__order", "criterion__key"))


def group_state(group: AuditPlanGroup, plans: list[AuditPlan]) -> str:
    """A digest of everything the shared decision reads: each plan's inputs (its gold, verdicts, released count;
    figures.read_plan's state, without the statistics) and the group's levels."""
    states = [read_plan(plan).state for plan in sorted(plans, key=lambda plan: plan.pk)]
    return content_cache.digest("audit-group", group.pk, group.k, group.confidence, group.closed_at is None, states)


def shared_dict(group: AuditPlanGroup, plans: list[AuditPlan], reading: SharedDecision) -> dict:
    """The stored form of a shared decision: the release's line and a row per criterion (with its plan's id)."""
    plan_of = {plan.criterion.key: plan.pk for plan in plans}
    rows = []
    for r in reading.criteria:
        d = r.decision
        rows.append(
            {
                "criterion": r.key,
                "plan": plan_of[r.key],
                "design": r.design,
                "minimum": d.minimum,
                "decided": d.decided,
                "decided_at": d.decided_at,
                "decided_by": d.decided_by,
                "lower": d.lower,
                "upper": d.upper,
                "estimate": d.estimate.estimate,
                "n_labeled": d.n_labeled,
                "n_gold": d.n_gold,
                "n_pending": d.n_pending,
                "n_not_applicable": d.n_not_applicable,
                "N": d.N,
                "alpha_pass": r.alpha_pass,
                "alpha_fail": r.alpha_fail,
            }
        )
    return {
        "group": group.pk,
        "k": group.k,
        "confidence": reading.confidence,
        "alpha_pass": reading.alpha_pass,
        "alpha_fail": reading.alpha_fail,
        "decided": reading.decided,
        "decided_at": reading.decided_at,
        "deciding": list(reading.deciding),
        "undecided": list(reading.undecided),
        "criteria": rows,
        "refused": None,
    }


def compute(group: AuditPlanGroup) -> tuple[dict, str]:
    """The shared decision now and the state it is of (the worker's part; tests call it too). A group whose plans
    cannot be read as one sample any more (one closed on its own page) stores why, in words, instead."""
    plans = _plans(group)
    state = group_state(group, plans)
    try:
        reading = shared_reading(plans, confidence=group.confidence)
    except SharedReadingError as exc:
        return {"group": group.pk, "k": group.k, "refused": str(exc), "criteria": []}, state
    if len(reading.criteria) != group.k:  # the levels were fixed for k criteria at the start
        return {
            "group": group.pk,
            "k": group.k,
            "refused": "the group's plans are not its k criteria",
            "criteria": [],
        }, state
    return shared_dict(group, plans, reading), state


def recompute(group_id: int) -> int:
    """Compute the group's shared decision until it is of the latest change seen, unless another computation of it
    is under way (which will see the change). Returns how many computations this call ran."""
    return worker_figures.coalesced(LOCK_SPACE, group_id, partial(_is_current, group_id), partial(_compute, group_id))


def _is_current(group_id: int) -> bool:
    row = AuditPlanGroup.objects.filter(pk=group_id).values_list("wanted", "done", "figures__isnull").first()
    if row is None:
        return True  # gone: nothing to compute
    wanted, done, empty = row
    return done >= wanted and not empty


def _compute(group_id: int) -> None:
    started, t0 = timezone.now(), time.monotonic()
    group = AuditPlanGroup.objects.get(pk=group_id)
    wanted = group.wanted
    figures, state = compute(group)
    AuditPlanGroup.objects.filter(pk=group_id).update(
        figures=figures,
        gold_state=state,
        done=Greatest(F("done"), wanted),
        computed_at=started,
        duration_s=time.monotonic() - t0,
    )


@dataclass(frozen=True)
class StoredGroup:
    """A group's stored shared decision (None until first computed) and how fresh it is."""

    figures: dict | None
    current: bool
    as_of: int
    seen: int
    computed_at: datetime | None
    duration_s: float | None

    def words(self, now: datetime | None = None) -> str:
        return worker_figures.fresh_words(
            self.computed_at if self.figures is not None else None,
            f"change {self.as_of}",
            current=self.current,
            now=now,
        )

    def freshness(self) -> dict:
        return worker_figures.freshness_dict(
            current=self.current, as_of=self.as_of, seen=self.seen, computed_at=self.computed_at,
            duration_s=self.duration_s, words=self.words(),
        )  # fmt: skip


def stored_group(group: AuditPlanGroup) -> StoredGroup:
    """The group's shared decision as stored; no query beyond the group's row, which the caller holds. A group asked
    for long ago and still behind is asked for again (its task was lost)."""
    if not group.is_current and group.requested_at < timezone.now() - stored_figures.KICK_AFTER:
        request(group)
    return StoredGroup(group.figures, group.is_current, group.done, group.wanted, group.computed_at, group.duration_s)


def release_words(figures: dict) -> str:
    """The release's line: "PASS: every criterion passed (the last at label 131)", "FAIL came from b at label 131",
    or what it waits for."""
    if figures.get("refused"):
        return f"Not read as one sample: {figures['refused']}"
    decided, at, deciding, undecided = (
        figures["decided"],
        figures["decided_at"],
        figures["deciding"],
        figures["undecided"],
    )
    if decided == "FAIL":
        return f"FAIL came from {', '.join(deciding)} at label {at}: the release fails when any criterion fails."
    if decided == "PASS":
        return f"PASS at label {at}: every criterion passed (PASS needs every criterion)."
    return f"Not decided: PASS needs every criterion; waiting for {', '.join(undecided)}."
