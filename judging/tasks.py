"""Celery entry points for judge runs: take ids, claim work through the runner, nothing else.

Lanes claim items one at a time with a conditional update (judging/runner.py), so a
redelivered or duplicated task is harmless: it finds the items done, or helps. No
time limit: a lane lives as long as its run has items; acks_late (settings) returns
the message to the queue if the worker dies.
"""

from __future__ import annotations

import logging

from celery import shared_task
from celery.signals import worker_init, worker_process_init, worker_ready

from . import runner
from .warmup import warm_up, warm_up_limiter

log = logging.getLogger(__name__)


@shared_task(acks_late=True, ignore_result=True)
def run_lane(run_id: int) -> str:
    return runner.work_lane(run_id)


@shared_task(acks_late=True, ignore_result=True)
def resume_runs() -> int:
    """Give every unfinished Celery run fresh lanes (they wait out the leases of lanes that died)."""
    run_ids = runner.unfinished_runs()
    for run_id in run_ids:
        runner.enqueue_lanes(run_id)
    if run_ids:
        log.info("resuming judge runs %s", run_ids)
    return len(run_ids)


@worker_init.connect
def _warm_up_before_forking(sender=None, **kwargs) -> None:
    # In the parent, once: every pool process inherits the imported SDKs and the TLS context.
    warm_up()
    # Connected now rather than at import, so that it runs after the handler Celery's Django fixup connects
    # when the worker starts, which closes every database connection a pool process has.
    worker_process_init.connect(_connect_before_the_first_task, weak=False)


def _connect_before_the_first_task(sender=None, **kwargs) -> None:
    # A pool process opens its database and Redis connections now rather than in its first lane (measured:
    # 20-50 ms each before that lane's first call); CONN_MAX_AGE and CELERY_DB_REUSE_MAX keep them open.
    from django.db import DatabaseError, connection

    try:
        connection.ensure_connection()
    except DatabaseError:  # the database is down: the first task connects (or fails) as it would have
        log.warning("judging: could not connect to the database at pool process start", exc_info=True)
    warm_up_limiter()


@worker_ready.connect
def _resume_when_a_worker_starts(sender=None, **kwargs) -> None:
    # Through the broker, so the database is touched in a pool process, never in the parent before it forks.
    resume_runs.delay()
