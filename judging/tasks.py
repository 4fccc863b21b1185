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
def _import_the_sdks_before_forking(sender=None, **kwargs) -> None:
    # The SDKs take seconds of CPU to import; in the parent, once, every pool process inherits them
    # instead of paying for the import at its first lane (measured: ~16% of a 2,000-item run).
    import anthropic
    import openai

    from .backends import openai_compat, tls_context

    # Building a client imports the HTTP transport modules the SDKs load lazily, and the shared TLS context
    # reads the CA store: also once, here (measured: a quarter of a second of each pool process's first lane).
    openai.OpenAI(api_key="warm-up", http_client=openai.DefaultHttpxClient(verify=tls_context())).close()
    anthropic.Anthropic(api_key="warm-up", http_client=anthropic.DefaultHttpxClient(verify=tls_context())).close()
    # The SDKs build their response models' validators at the first answer (~10 ms): here instead.
    openai_compat.warm_up()


@worker_process_init.connect
def _connect_before_the_first_task(sender=None, **kwargs) -> None:
    # A pool process opens its database connection now rather than in its first lane (measured: 20-50 ms
    # before that lane's first call); CONN_MAX_AGE keeps it open between tasks.
    from django.db import DatabaseError, connection

    try:
        connection.ensure_connection()
    except DatabaseError:  # the database is down: the first task connects (or fails) as it would have
        log.warning("judging: could not connect to the database at pool process start", exc_info=True)


@worker_ready.connect
def _resume_when_a_worker_starts(sender=None, **kwargs) -> None:
    # Through the broker, so the database is touched in a pool process, never in the parent before it forks.
    resume_runs.delay()
