"""Celery entry points for judge runs: take ids, call the runner or the lane, nothing else.

A lane claims its items with leases (judging/lane.py), so a redelivered or duplicated task
is harmless: it finds the items done, or helps. No time limit: a lane lives as long as its
run has items; acks_late (settings) returns the message to the queue if the worker dies.
"""

from __future__ import annotations

import logging

from celery import shared_task
from celery.signals import worker_init, worker_ready
from django.db import DatabaseError

from . import lane, run_status, runner
from .warmup import warm_up

log = logging.getLogger(__name__)


# A lane that loses the database (a restart, a dropped connection) is run again a little later: it picks up
# where the run is, since the items it held are claimed again once their leases run out. After the last
# retry the run is marked failed with the reason (if the database takes it), never left "running".
# Registered under the name the runner queues lanes by (runner.RUN_LANE_TASK): it never imports this module.
@shared_task(
    name=runner.RUN_LANE_TASK,
    bind=True,
    acks_late=True,
    ignore_result=True,
    autoretry_for=(DatabaseError,),
    retry_backoff=True,
    max_retries=5,
)
def run_lane(self, run_id: int) -> str | None:
    try:
        return lane.work_lane(run_id)
    except DatabaseError as exc:
        if self.request.retries >= self.max_retries:
            tries = self.max_retries + 1
            run_status.fail_if_possible(run_id, f"a lane lost the database {tries} times ({type(exc).__name__})")
        raise


@shared_task(acks_late=True, ignore_result=True)
def resume_runs() -> int:
    """Give every unfinished Celery run fresh lanes (they wait out the leases of lanes that died)."""
    run_ids = run_status.unfinished_celery_runs()
    for run_id in run_ids:
        runner.enqueue_lanes(run_id)
    if run_ids:
        log.info("resuming judge runs %s", run_ids)
    return len(run_ids)


@worker_init.connect
def _warm_up_before_forking(sender=None, **kwargs) -> None:
    # In the parent, once: every pool process inherits the imported SDKs instead of importing them itself.
    warm_up()


@worker_ready.connect
def _resume_when_a_worker_starts(sender=None, **kwargs) -> None:
    # Through the broker, so the database is touched in a pool process, never in the parent before it forks.
    resume_runs.delay()
