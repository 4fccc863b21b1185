"""The one model of data in and out: a file from the Import page waiting for a worker."""

from __future__ import annotations

from django.conf import settings
from django.db import models


class ImportJob(models.Model):
    """A file from the Import page that a Celery worker imports (formats/import_jobs.py).

    A large file would outlast the web request, so it waits here for a worker. The file itself is kept in
    the row, not on a disk: the workers may run on other machines. It is emptied once the import ends.
    """

    class Status(models.TextChoices):
        QUEUED = "queued"
        RUNNING = "running"
        DONE = "done"
        FAILED = "failed"

    FINISHED = (Status.DONE, Status.FAILED)

    kind = models.CharField(max_length=10)  # rubric, cases or labels: a card of the Import page
    file_name = models.CharField(max_length=255)
    content = models.BinaryField(default=b"")
    size = models.PositiveBigIntegerField()
    options = models.JSONField(default=dict)  # the form's other fields: eval_set, rubric (a ref), agent_version
    status = models.CharField(max_length=10, choices=Status.choices, default=Status.QUEUED)
    result = models.JSONField(default=dict)  # ok, messages, counts, and what the next-step links need
    created_by = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.CASCADE, related_name="+")
    created_at = models.DateTimeField(auto_now_add=True)
    started_at = models.DateTimeField(null=True, blank=True)
    finished_at = models.DateTimeField(null=True, blank=True)

    class Meta:
        # Made in labeling (migration 0010) before formats existed; the table keeps its name and rows.
        db_table = "labeling_importjob"

    def __str__(self) -> str:
        return f"import {self.pk} of {self.file_name} ({self.status})"

    @property
    def finished(self) -> bool:
        return self.status in self.FINISHED
