"""An audit plan's figures computed in a Celery worker and stored (issue 37): asking for them, computing them once
per plan at a time with the latest gold winning, and reading them with how fresh they are.

On a large candidate the decision, its bounds and the forecast take seconds to tens of seconds, so no web request
computes them. A change to the plan's gold or labels (figures_triggers.py), a release and a new plan bump the row's
`wanted` and send `recompute_plan_figures`; the pages, Home, the API and `audit_plan show` read the row and say how
fresh it is ("as of gold change 212 (180 gold labels), 4 s ago; updating…"). The gate reads it only when its
`gold_state` equals the digest of what the gate reads now (`current_figures`), and otherwise asks a worker and
waits a bounded time.

One computation per row at a time, the latest change winning, and one UPDATE for the figures with their state and
times: calibration/data/worker_figures.py says how and why, for every kind of stored figures. acks_late hands a
killed worker's task to another worker (settings), as does the next reader after KICK_AFTER.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from datetime import datetime, timedelta
from functools import partial

from django.conf import settings
from django.db import IntegrityError, transaction
from django.db.models import F
from django.db.models.functions import Greatest
from django.utils import timezone

from calibration.audits.figures import AuditFigures, read_plan
from calibration.data import worker_figures
from calibration.models import AuditPlan, AuditPlanFigures

# The Celery task's name (calibration/tasks.py registers it; this module sends it by name and never imports it).
TASK = "recompute-plan-figures"
# The first key of the two-int advisory lock: this lock's own space, so that no other advisory lock meets it.
LOCK_SPACE = 37_001
# A row stale for longer than this since it was last asked for is asked for again by the next reader: the task was
# lost (a broker restart) or its worker died before acks_late could hand it on.
KICK_AFTER = timedelta(seconds=60)
# How often the gate looks at the row while it waits for a worker.
WAIT_POLL_S = 0.2


# How the gate's answer begins when the wait runs out (the API answers it with 503, the CLI with exit 2).
FIGURES_UPDATING = "undecided: figures updating"


class FiguresUpdating(Exception):
    """The figures of the gold the gate reads were not computed within the wait."""


def after_commit(fn: Callable[[], None]) -> None:
    transaction.on_commit(fn)


def send(plan_id: int, minimum: float | None = None, confidence: float | None = None) -> None:
    """Queue a computation of the plan's figures (at the plan's thresholds when none are given)."""
    from celery import current_app

    current_app.send_task(TASK, args=[plan_id, minimum, confidence])


def notify(plan_id: int) -> None:
    """A change to the plan's gold or labels was committed: its figures are wanted again."""
    send(plan_id)


def _thresholds(plan: AuditPlan, minimum: float | None, confidence: float | None) -> tuple[float, float]:
    return (plan.min_pass_rate if minimum is None else minimum, plan.confidence if confidence is None else confidence)


def request(plan: AuditPlan, minimum: float | None = None, confidence: float | None = None) -> int:
    """Ask for the plan's figures at these thresholds (the plan's when None): bump the row's `wanted` (creating the
    row) and send the task once this transaction commits. Returns the `wanted` a computation must reach."""
    at = _thresholds(plan, minimum, confidence)
    row = _row(plan, at)
    AuditPlanFigures.objects.filter(pk=row.pk).update(wanted=F("wanted") + 1, requested_at=timezone.now())
    wanted = AuditPlanFigures.objects.filter(pk=row.pk).values_list("wanted", flat=True).get()
    same = at == (plan.min_pass_rate, plan.confidence)
    after_commit(lambda: send(plan.pk, None if same else at[0], None if same else at[1]))
    return wanted


def _row(plan: AuditPlan, at: tuple[float, float]) -> AuditPlanFigures:
    try:
        with transaction.atomic():
            row, _ = AuditPlanFigures.objects.get_or_create(plan=plan, min_pass_rate=at[0], confidence=at[1])
    except IntegrityError:  # another process created it between our look and our insert
        row = AuditPlanFigures.objects.get(plan=plan, min_pass_rate=at[0], confidence=at[1])
    return row


def changed(plan_ids: Iterable[int]) -> None:
    """The gold or labels of these plans changed (committed): every row of theirs is behind; the plans' own rows
    are computed again (a gate's rows when a gate asks)."""
    ids = sorted(set(plan_ids))
    if not ids:
        return
    AuditPlanFigures.objects.filter(plan_id__in=ids).update(wanted=F("wanted") + 1, requested_at=timezone.now())
    for plan in AuditPlan.objects.filter(pk__in=ids):
        _row(plan, (plan.min_pass_rate, plan.confidence))  # a plan without its row yet gets one, behind
        after_commit(partial(notify, plan.pk))


def recompute(plan_id: int, minimum: float | None = None, confidence: float | None = None) -> int:
    """The worker's part: compute the row's figures until they are of the latest change seen, unless another
    computation of the row is under way (it will see the change). Returns how many computations this call ran."""
    plan = AuditPlan.objects.filter(pk=plan_id).first()
    if plan is None:
        return 0
    row = _row(plan, _thresholds(plan, minimum, confidence))
    return worker_figures.coalesced(LOCK_SPACE, row.pk, partial(_is_current, row.pk), partial(_compute, row))


def _is_current(row_id: int) -> bool:
    wanted, done, empty = (
        AuditPlanFigures.objects.filter(pk=row_id).values_list("wanted", "done", "figures__isnull").get()
    )
    return done >= wanted and not empty


def _compute(row: AuditPlanFigures) -> None:
    started, t0 = timezone.now(), time.monotonic()
    wanted = AuditPlanFigures.objects.filter(pk=row.pk).values_list("wanted", flat=True).get()
    plan = AuditPlan.objects.for_figures().get(pk=row.plan_id)  # afresh: a kept decision may have come meanwhile
    reading = read_plan(plan, minimum=row.min_pass_rate, confidence=row.confidence)
    figures = reading.finish()
    # One statement: the figures, the state they are of and their times together, or (killed before it) nothing.
    AuditPlanFigures.objects.filter(pk=row.pk).update(
        figures=figures.as_dict(),
        done=Greatest(F("done"), wanted),
        gold_state=reading.state,
        n_gold=reading.n_gold,
        computed_at=started,
        duration_s=time.monotonic() - t0,
        computations=F("computations") + 1,
    )


@dataclass(frozen=True)
class Stored:
    """A plan's stored figures (None until first computed) and how fresh they are."""

    figures: AuditFigures | None
    current: bool
    as_of: int  # the change the figures are of
    seen: int  # the changes seen so far
    n_gold: int
    computed_at: datetime | None
    duration_s: float | None

    def words(self, now: datetime | None = None) -> str:
        """ "as of gold change 212 (180 gold labels), 4 s ago; updating…": said the same on every page and answer."""
        return worker_figures.fresh_words(
            self.computed_at if self.figures is not None else None,
            f"gold change {self.as_of} ({self.n_gold} gold labels)",
            current=self.current,
            now=now,
        )

    def freshness(self) -> dict:
        """The freshness as the API and `audit_plan show --format json` answer it."""
        return worker_figures.freshness_dict(
            current=self.current, as_of=self.as_of, seen=self.seen, computed_at=self.computed_at,
            duration_s=self.duration_s, words=self.words(), n_gold=self.n_gold,
        )  # fmt: skip

    def as_dict(self) -> dict:
        """`audit_plan show --format json` and the API: the figures' JSON (AuditFigures.as_dict) with a
        `freshness` key; before the first computation, only the plan's id and its freshness."""
        return (self.figures.as_dict() if self.figures else {}) | {"freshness": self.freshness()}


def _stored(row: AuditPlanFigures | None) -> Stored:
    if row is None:
        return Stored(None, False, 0, 0, 0, None, None)
    figures = AuditFigures.from_dict(row.figures) if row.figures is not None else None
    return Stored(figures, row.is_current, row.done, row.wanted, row.n_gold, row.computed_at, row.duration_s)


def stored_figures(plans: Iterable[AuditPlan]) -> dict[int, Stored]:
    """Each plan's figures at its own thresholds, as stored: one query, whatever the number of plans. A plan never
    asked for, or asked for long ago and still behind, is asked for again (its task was lost)."""
    plans = list(plans)
    own = {plan.pk: (plan.min_pass_rate, plan.confidence) for plan in plans}
    rows = AuditPlanFigures.objects.filter(plan__in=list(own))
    by_plan = {r.plan_id: r for r in rows if own[r.plan_id] == (r.min_pass_rate, r.confidence)}
    stale_since = timezone.now() - KICK_AFTER
    lost = [
        plan
        for plan in plans
        if ((row := by_plan.get(plan.pk)) is None or (not row.is_current and row.requested_at < stale_since))
    ]
    if lost:
        kick(lost)
        again = AuditPlanFigures.objects.filter(plan__in=[p.pk for p in lost])
        by_plan |= {r.plan_id: r for r in again if own[r.plan_id] == (r.min_pass_rate, r.confidence)}
    return {plan.pk: _stored(by_plan.get(plan.pk)) for plan in plans}


def kick(plans: list[AuditPlan]) -> None:
    """Ask again for figures whose request was lost."""
    for plan in plans:
        request(plan)


def stored_for(plan: AuditPlan) -> Stored:
    return stored_figures([plan])[plan.pk]


def current_figures(
    plan: AuditPlan, *, minimum: float | None = None, confidence: float | None = None, wait_s: float | None = None
) -> AuditFigures:
    """The figures of the gold as it is now, at these thresholds: the stored ones if their state is today's, else
    computed by a worker within `wait_s` (ICEWATER_GATE_FIGURES_WAIT_SECONDS). FiguresUpdating when the wait runs
    out: the gate never decides on figures of another gold state."""
    wait_s = settings.ICEWATER_GATE_FIGURES_WAIT_SECONDS if wait_s is None else wait_s
    at = _thresholds(plan, minimum, confidence)
    deadline = time.monotonic() + wait_s
    while True:
        state = read_plan(plan, minimum=at[0], confidence=at[1]).state
        row = AuditPlanFigures.objects.filter(plan=plan, min_pass_rate=at[0], confidence=at[1]).first()
        if row is not None and row.figures is not None and row.gold_state == state:
            return AuditFigures.from_dict(row.figures)
        updating = FiguresUpdating(
            f"{FIGURES_UPDATING} (audit plan {plan.pk}: a worker is computing the figures of today's gold, "
            f"not done within {wait_s:g} s); ask again shortly"
        )
        if time.monotonic() >= deadline and row is not None and row.done >= row.wanted:
            raise updating  # computed, but of another gold than today's, and no time left to ask again
        wanted = request(plan, *at)
        while not _reached(_row(plan, at), wanted):
            if time.monotonic() >= deadline:
                raise updating
            time.sleep(WAIT_POLL_S)


def _reached(row: AuditPlanFigures, wanted: int) -> bool:
    return row.done >= wanted and row.figures is not None
