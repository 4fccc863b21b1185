"""The runs of the periodic jobs (periodic/jobs.py), one row per job and slot."""

from __future__ import annotations

import datetime as dt

from django.db import models


class PeriodicRunQuerySet(models.QuerySet["PeriodicRun"]):
    def claim(self, *, job: str, slot: dt.datetime) -> PeriodicRun | None:
        """The run of `job` in `slot`, made now; None if it was made before. One insert, and the unique constraint
        decides between two at once: exactly one of them gets the run."""
        run, created = self.get_or_create(job=job, slot=slot)
        return run if created else None


class PeriodicRun(models.Model):
    """One run of a periodic job in one slot of its period. The worker that makes the row does the run: a run sent
    twice (two beats, a beat restarted in the same slot, a message delivered again) is done once."""

    job = models.CharField(max_length=100)
    slot = models.DateTimeField()  # the start of the slot (periodic/slots.py)
    claimed_at = models.DateTimeField(auto_now_add=True)
    # Empty while the job runs, or if the worker was lost during it: that slot is not run again, the next one is.
    finished_at = models.DateTimeField(null=True, blank=True)

    objects = PeriodicRunQuerySet.as_manager()

    class Meta:
        constraints = [models.UniqueConstraint(fields=["job", "slot"], name="one_run_per_job_and_slot")]
        ordering = ["-slot"]

    def __str__(self) -> str:
        return f"{self.job} at {self.slot:%Y-%m-%d %H:%M:%S}"
