"""A judge run's status, changed only here: queued -> running -> done, or failed, or cancelled.

The runner (judging/runner.py: it plans, enqueues and cancels runs) and the lanes (judging/lane.py: they
work the items) both move a run along; neither imports the other for it. Each change is one conditional
UPDATE from the statuses it may leave, so two lanes, or a lane and a cancel, never undo each other's:
an ended run stays ended.
"""

from __future__ import annotations

import logging

from django.db import DatabaseError
from django.utils import timezone

from .models import JudgeRun, RunItem

log = logging.getLogger(__name__)


def mark_running(run_id: int) -> bool:
    """Queued -> running, when the first lane takes the run; False if another lane did, or the run ended."""
    changed = JudgeRun.objects.filter(pk=run_id, status=JudgeRun.Status.QUEUED).update(
        status=JudgeRun.Status.RUNNING, started_at=timezone.now()
    )
    return changed == 1


def cancel(run_id: int) -> bool:
    """Stop the run; its lanes notice within a heartbeat. False if it had already ended."""
    changed = (
        JudgeRun.objects.active().filter(pk=run_id).update(status=JudgeRun.Status.CANCELLED, finished_at=timezone.now())
    )
    return changed == 1


def fail(run_id: int, message: str) -> None:
    JudgeRun.objects.active().filter(pk=run_id).update(
        status=JudgeRun.Status.FAILED, error=message, finished_at=timezone.now()
    )


def fail_if_possible(run_id: int, message: str) -> None:
    """fail when the database that has just failed the run may itself be gone (logged if it is)."""
    try:
        fail(run_id, message)
    except DatabaseError:
        log.exception("judge run %s: could not record that it failed (%s)", run_id, message)


def finish_if_complete(run_id: int) -> str | None:
    """Mark the run done once every item is; return its status (None if the run is gone)."""
    if not RunItem.objects.filter(run_id=run_id).exclude(state=RunItem.State.DONE).exists():
        JudgeRun.objects.filter(pk=run_id, status=JudgeRun.Status.RUNNING).update(
            status=JudgeRun.Status.DONE, finished_at=timezone.now()
        )
    return JudgeRun.objects.filter(pk=run_id).values_list("status", flat=True).first()


def unfinished_celery_runs() -> list[int]:
    """The runs still queued or running on Celery (a worker that starts gives them fresh lanes)."""
    return list(JudgeRun.objects.active().filter(mode=JudgeRun.Mode.CELERY).values_list("pk", flat=True))
