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

    workspace = models.ForeignKey("evals.Workspace", on_delete=models.CASCADE, related_name="import_jobs")
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

    workspace_path = "workspace"

    class Meta:
        # Made in labeling (migration 0010) before formats existed; the table keeps its name and rows.
        db_table = "labeling_importjob"

    def __str__(self) -> str:
        return f"import {self.pk} of {self.file_name} ({self.status})"

    @property
    def finished(self) -> bool:
        return self.status in self.FINISHED


class TraceBinding(models.Model):
    """Where an OpenTelemetry traces token's spans go, and how a trace becomes an output (docs/formats.md,
    "OpenTelemetry"). Made with the token on the gate page's token panel (api.GateToken.trace_binding)."""

    eval_set = models.ForeignKey("evals.EvalSet", on_delete=models.CASCADE, related_name="trace_bindings")
    # The span attribute (root span first, then its resource) that names the case; the trace id otherwise.
    case_id_attribute = models.CharField(max_length=200, blank=True, default="session.id")
    # The resource attribute (then root span attribute) that names the agent version.
    agent_version_attribute = models.CharField(max_length=200, default="service.version")
    # Empty: the root is the span without a parent. Otherwise the first span of this name is the trace's root.
    root_span_name = models.CharField(max_length=200, blank=True)

    class RootKind(models.TextChoices):
        """formats.otel_traces.ROOT_KINDS: how each is recognised."""

        ANY = "", "any kind"
        AGENT = "agent", "agent"  # openinference.span.kind AGENT, or gen_ai.operation.name invoke_agent
        CHAIN = "chain", "chain"  # openinference.span.kind CHAIN
        SERVER = "server", "server"  # the span kind SERVER: a request the service answered

    # With or without a name: the first span of this kind is the root.
    root_span_kind = models.CharField(max_length=10, blank=True, choices=RootKind.choices)
    # Sampling: keep one trace in N (on the trace id, so every replica agrees), or any trace a rule keeps.
    sample_one_in = models.PositiveIntegerField(default=1)
    keep_attribute = models.CharField(max_length=200, blank=True)
    keep_value = models.CharField(max_length=500, blank=True)
    keep_judge_fail = models.BooleanField(default=True)

    workspace_path = "eval_set__workspace"

    def __str__(self) -> str:
        return f"traces into {self.eval_set}"


class TraceSpan(models.Model):
    """One received span, waiting until its trace is complete (formats/trace_outputs.py). A span sent twice is
    stored once (the unique constraint); the rows of a trace are deleted when it becomes an output or is refused."""

    binding = models.ForeignKey(TraceBinding, on_delete=models.CASCADE, related_name="spans")
    trace_id = models.CharField(max_length=32)  # lower-case hex, as OTLP/JSON writes it
    span_id = models.CharField(max_length=16)
    parent_span_id = models.CharField(max_length=16, blank=True)
    name = models.CharField(max_length=500)
    kind = models.PositiveSmallIntegerField(default=0)
    start_ns = models.BigIntegerField()
    end_ns = models.BigIntegerField()
    status_code = models.PositiveSmallIntegerField(default=0)
    attributes = models.JSONField(default=dict)
    resource = models.JSONField(default=dict)
    events = models.JSONField(default=list)
    received_at = models.DateTimeField()

    workspace_path = "binding__eval_set__workspace"

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["binding", "trace_id", "span_id"], name="one_span_per_trace_and_id")
        ]
        indexes = [models.Index(fields=["binding", "received_at"], name="trace_span_binding_received")]

    def __str__(self) -> str:
        return f"span {self.span_id} of trace {self.trace_id}"


class TraceOutcome(models.Model):
    """What became of one trace: an output, sampled out, or refused (with the reason the lead reads on the
    eval set's page). One per trace: finishing a trace twice changes nothing."""

    class Status(models.TextChoices):
        OUTPUT = "output", "made an output"
        SAMPLED_OUT = "sampled_out", "sampled out"
        REJECTED = "rejected", "rejected"

    binding = models.ForeignKey(TraceBinding, on_delete=models.CASCADE, related_name="outcomes")
    trace_id = models.CharField(max_length=32)
    status = models.CharField(max_length=12, choices=Status.choices)
    reason = models.CharField(max_length=500, blank=True)
    spans = models.PositiveIntegerField(default=0)
    # The ids of the spans it was finished with: a span sent again after the trace was finished is told from one
    # that came late. Empty for traces finished before this was kept (every span that comes for them is late).
    span_ids = models.JSONField(default=list)
    # Spans that came after the trace was finished, in no output: their ids (each counted once however often it is
    # sent) and how many (for the eval set page's sum). The exporter is told too, as rejected spans.
    late_span_ids = models.JSONField(default=list)
    late_spans = models.PositiveIntegerField(default=0)
    output = models.ForeignKey("evals.Output", null=True, blank=True, on_delete=models.SET_NULL, related_name="+")
    finished_at = models.DateTimeField(auto_now_add=True)

    workspace_path = "binding__eval_set__workspace"

    class Meta:
        constraints = [models.UniqueConstraint(fields=["binding", "trace_id"], name="one_outcome_per_trace")]
        ordering = ["-finished_at"]

    def __str__(self) -> str:
        return f"trace {self.trace_id}: {self.get_status_display()}"
