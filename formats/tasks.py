"""Celery entry points of labeling: take ids, call the domain code, nothing else."""

from __future__ import annotations

from celery import shared_task

from . import import_jobs


# No retries: an import that fails says why on the page; a worker lost mid-import leaves the message for another
# worker (acks_late), which runs the job again from the start (the import is atomic and idempotent).
@shared_task(acks_late=True, ignore_result=True)
def run_import_job(job_id: int) -> None:
    import_jobs.run(job_id)
