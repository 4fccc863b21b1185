"""A run item's lease: how a lane claims items, keeps them while it works them and gives them back.

A lane claims a few items at a time (SELECT ... FOR UPDATE SKIP LOCKED) with a lease it renews every heartbeat
(lane.HEARTBEAT_S); an item whose lane stopped renewing it is claimed again by any live lane. Each claim counts
toward the item's MAX_CLAIMS (judging/lane.py), except when the item was given back through no fault of its own.
"""

from __future__ import annotations

from datetime import timedelta

from django.db import transaction
from django.db.models import F
from django.utils import timezone

from .models import JudgeRun, RunItem

# An item's lease outlives several missed heartbeats: a live lane never loses its items to a hiccup,
# and a dead worker's items are taken again about LEASE_S after it died.
LEASE_S = 10.0


def claim(run_id: int, lane_id: str, limit: int) -> list[RunItem]:
    """Take up to `limit` pending items, else items whose lease ran out, outputs loaded; [] if the run stopped.

    SKIP LOCKED: lanes claiming at the same moment take different items instead of waiting on each other
    (SQLite has no row locks; there every transaction takes the write lock at once: settings.py).
    """
    now = timezone.now()
    running = (
        RunItem.objects.select_for_update(skip_locked=True, of=("self",))
        .filter(run_id=run_id, run__status=JudgeRun.Status.RUNNING)
        .select_related("output__case")
        .order_by("pk")
    )
    with transaction.atomic():
        items = list(running.filter(state=RunItem.State.PENDING)[:limit])
        if not items:
            items = list(running.filter(state=RunItem.State.CLAIMED, lease_until__lt=now)[:limit])
        lease = now + timedelta(seconds=LEASE_S)
        claimed = RunItem.objects.filter(pk__in=[i.pk for i in items])
        claimed.update(state=RunItem.State.CLAIMED, lane=lane_id, lease_until=lease, claims=F("claims") + 1)
    return items


def renew(run_id: int, lane_id: str) -> bool:
    """Renew the leases of the items this lane holds; False once the run is no longer running (a cancel, a
    failure), which the lane takes as its signal to stop."""
    RunItem.objects.filter(run_id=run_id, lane=lane_id, state=RunItem.State.CLAIMED).update(
        lease_until=timezone.now() + timedelta(seconds=LEASE_S)
    )
    return JudgeRun.objects.filter(pk=run_id, status=JudgeRun.Status.RUNNING).exists()


def release(lane_id: str, item: RunItem, *, tried: bool = False) -> None:
    """Give a claimed item back. `tried`: its verdicts could not be written, and the claim counts toward
    MAX_CLAIMS; otherwise (a cancel, an outage, the lane stopping) the item was not at fault and it does not."""
    uncount = {} if tried else {"claims": F("claims") - 1}
    RunItem.objects.filter(pk=item.pk, lane=lane_id, state=RunItem.State.CLAIMED).update(
        state=RunItem.State.PENDING, lane="", lease_until=None, **uncount
    )


def release_all(run_id: int, lane_id: str) -> None:
    """Give back every item a stopped lane still holds (after its pool shut down: none is being asked)."""
    RunItem.objects.filter(run_id=run_id, lane=lane_id, state=RunItem.State.CLAIMED).update(
        state=RunItem.State.PENDING, lane="", lease_until=None, claims=F("claims") - 1
    )
