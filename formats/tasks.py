"""Celery entry points of formats (imports in the background, finishing traces): take ids, call the domain code."""

from __future__ import annotations

from celery import shared_task
from celery.signals import worker_ready
from django.conf import settings
from django.db import OperationalError

from . import import_jobs, trace_outputs


# No retries: an import that fails says why on the page; a worker lost mid-import leaves the message for another
# worker (acks_late), which runs the job again from the start (the import is atomic and idempotent).
@shared_task(acks_late=True, ignore_result=True)
def run_import_job(job_id: int) -> None:
    import_jobs.run(job_id)


# Scheduled by the traces receiver (api/otlp.py) with a countdown of the quiet period. While spans still wait
# (a trace not yet quiet, or without its root), it schedules itself again; trace_outputs finishes each trace once
# however many of these run.
# A database that cannot take the write now (SQLite locked by another writer past its timeout, a lost
# connection) rolls back the batch and leaves its spans staged: the task tries again after the quiet period.
@shared_task(acks_late=True, ignore_result=True)
def finish_traces(binding_id: int) -> None:
    try:
        trace_outputs.finish_ready_traces(binding_id=binding_id)
        waiting = trace_outputs.has_waiting_spans(binding_id)
    except OperationalError:
        waiting = True
    if waiting:
        finish_traces.apply_async((binding_id,), countdown=settings.ICEWATER_OTLP_QUIET_SECONDS + 1)


@shared_task(acks_late=True, ignore_result=True)
def resume_trace_finishing() -> int:
    """Schedule the finisher of every token whose spans wait. Spans staged while no worker ran, or while the
    broker was down (the receiver could not schedule it), are finished without waiting for another export."""
    binding_ids = trace_outputs.bindings_with_waiting_spans()
    for binding_id in binding_ids:
        finish_traces.apply_async((binding_id,))
    return len(binding_ids)


@worker_ready.connect
def _finish_waiting_traces_when_a_worker_starts(sender=None, **kwargs) -> None:
    # Through the broker, so the database is touched in a pool process, never in the parent before it forks.
    resume_trace_finishing.delay()
