"""The one Celery entry point of the periodic jobs: claim the run of a job in its slot, then run it."""

from __future__ import annotations

import datetime as dt

from celery import shared_task
from celery.utils.log import get_task_logger
from django.utils import timezone

from .jobs import JOBS
from .models import PeriodicRun

logger = get_task_logger(__name__)
# Runs are kept this long (what ran when, for whoever asks the database), then deleted by the job's later runs.
KEEP_RUNS = dt.timedelta(days=7)


# No retries: a run that fails is logged and the next slot's run tries again. acks_late as every task here; a
# run delivered again after its worker was lost finds its claim taken and does nothing (the next slot runs).
@shared_task(acks_late=True, ignore_result=True)
def run_job(job: str, slot: str) -> None:
    """Sent by beat (periodic/scheduler.py) with the slot it was sent in, as an ISO 8601 time."""
    if job not in JOBS:  # a message from before the job was removed
        logger.warning("periodic: no job %r; its run of %s is dropped", job, slot)
        return
    when = dt.datetime.fromisoformat(slot)
    run = PeriodicRun.objects.claim(job=job, slot=when)
    if run is None:
        logger.info("periodic: %s, slot %s: already claimed, not run again", job, slot)
        return
    said = JOBS[job].run()
    PeriodicRun.objects.filter(pk=run.pk).update(finished_at=timezone.now())
    PeriodicRun.objects.filter(job=job, slot__lt=when - KEEP_RUNS).delete()
    logger.info("periodic: %s, slot %s: ran: %s", job, slot, said)
