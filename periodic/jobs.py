"""The periodic jobs: one entry each. `celery -A config beat` (exactly one) sends each job once per slot of its
period; a worker claims the run and calls the job's function (periodic/tasks.py). A job's function takes no
arguments, may run on any worker (and, if a run is lost, not at all in that slot), and says in a line what it did.

A new job is one `Job(...)` line below, with its period read from a setting in config/settings.py.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable
from dataclasses import dataclass

from django.conf import settings

from alerts.sweep import sweep_deliveries
from formats.trace_outputs import finish_every_waiting_trace
from watch.tasks import send_every_update

from .slots import SlotSchedule

RUN_TASK = "periodic.tasks.run_job"


@dataclass(frozen=True)
class Job:
    name: str
    period: dt.timedelta
    run: Callable[[], str]


JOBS: dict[str, Job] = {
    job.name: job
    for job in [
        # Spans staged while the broker was down (the receiver could not schedule their finisher) are finished
        # without waiting for another export (docs/formats.md, "OpenTelemetry").
        Job("finish-traces", dt.timedelta(seconds=settings.ICEWATER_TRACE_SWEEP_SECONDS), finish_every_waiting_trace),
        # Every active watch's update (watch/feed.py): what arrived is drawn, graded and fed, and gold that settled
        # since is taken, without anyone having to trigger it.
        Job("watch-updates", dt.timedelta(seconds=settings.ICEWATER_WATCH_UPDATE_SECONDS), send_every_update),
        # Alert deliveries whose task was lost (broker down when queued) or whose worker stopped mid-try
        # (docs/alerts.md).
        Job("alert-deliveries", dt.timedelta(seconds=settings.ICEWATER_ALERT_SWEEP_SECONDS), sweep_deliveries),
    ]
}


def beat_schedule() -> dict[str, dict]:
    """Celery's beat_schedule for the jobs. A run not started within its period is dropped by the worker
    (`expires`): the next slot's run does the same work, and a worker back after an outage does not work through
    a queue of stale runs."""
    return {
        job.name: {
            "task": RUN_TASK,
            "schedule": SlotSchedule(run_every=job.period),
            "args": (job.name,),
            "options": {"expires": job.period.total_seconds()},
        }
        for job in JOBS.values()
    }
