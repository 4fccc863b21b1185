"""Celery entry points for calibration: take ids, call the domain code, nothing else.

`recompute_plan_figures` computes an audit plan's figures in the worker (calibration/audits/stored_figures.py):
redelivered or sent fifty times in a burst, it computes once per change it finds, the others return at once.
`recompute_report_figures` computes a large eval set's calibration report the same way (calibration/report/
stored_report.py). `recompute_group_figures` does the same for an audit plan group's shared
decision (group_figures.py). acks_late (settings): a worker killed mid-computation leaves the message for another.
"""

from __future__ import annotations

from celery import shared_task
from django.db import DatabaseError

from calibration.audits import group_figures, stored_figures
from calibration.report import stored_report

# Every kind of stored figures: redelivered to another worker when one dies mid-computation, retried when the
# database is away (the computation starts again from the data as it is).
STORED_FIGURES: dict = {
    "acks_late": True,
    "ignore_result": True,
    "autoretry_for": (DatabaseError,),
    "retry_backoff": True,
    "max_retries": 5,
}


@shared_task(
    name=stored_figures.TASK,
    **STORED_FIGURES,
)
def recompute_plan_figures(plan_id: int, minimum: float | None = None, confidence: float | None = None) -> int:
    return stored_figures.recompute(plan_id, minimum, confidence)


@shared_task(
    name=stored_report.TASK,
    **STORED_FIGURES,
)
def recompute_report_figures(row_id: int) -> int:
    return stored_report.recompute(row_id)


@shared_task(
    name=group_figures.TASK,
    **STORED_FIGURES,
)
def recompute_group_figures(group_id: int) -> int:
    return group_figures.recompute(group_id)
