"""Celery entry points of the watch: update one watch, and send every active watch's update (the periodic job).

An update holds the watch's row lock (select_for_update skip_locked): a second one sent meanwhile finds it held and
is sent once more a little later instead of waiting, so a burst of triggers costs one update at a time and what
arrived during the running one is still fed soon; a second miss is left to the next periodic run. The update moves
rows only forward, so a redelivered task does nothing new.
"""

from __future__ import annotations

import logging

from celery import shared_task
from django.db import transaction

from .feed import update_locked
from .models import Watch

log = logging.getLogger(__name__)
# How long a trigger that found an update running waits before it tries once more.
RETRY_AFTER_SECONDS = 5


@shared_task(acks_late=True, ignore_result=True)
def update_watch(watch_id: int, again: bool = True) -> str:
    said = update_locked(watch_id)
    if said is None:
        if again and Watch.objects.active().filter(pk=watch_id).exists():
            update_watch.apply_async((watch_id, False), countdown=RETRY_AFTER_SECONDS)
        return f"watch {watch_id}: an update is running, or the watch is stopped"
    log.info(said)
    return said


def send_update(watch_id: int) -> None:
    """Send the watch's update once the caller's transaction commits (so it reads what the caller wrote)."""
    transaction.on_commit(lambda: update_watch.delay(watch_id))


def send_every_update() -> str:
    """The periodic job "watch-updates" (periodic/jobs.py): one update task per active watch."""
    ids = list(Watch.objects.active().order_by("pk").values_list("pk", flat=True))
    for watch_id in ids:
        update_watch.delay(watch_id)
    return f"sent the update of {len(ids)} active watches"
