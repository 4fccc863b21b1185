"""Judge configurations, judge runs and the verdicts they produce.

Every verdict keeps its raw output, the judge config (and its content hash),
the model id and the rubric version, so a moved pass rate can be traced to
the agent or to the instrument.
"""

from __future__ import annotations

import hashlib
import json

from django.conf import settings
from django.db import models

from evals.models import Criterion, EvalSet, Output, RubricVersion
from evals.validators import validate_name


class JudgeConfigLocked(Exception):
    """Raised when something tries to change a judge config that a run or a verdict refers to."""


class VerdictOutcome(models.TextChoices):
    """A judge's answer for one criterion. ERROR is not a FAIL: the judge could not answer."""

    PASS = "PASS", "PASS"
    FAIL = "FAIL", "FAIL"
    NOT_APPLICABLE = "NOT_APPLICABLE", "N/A"
    ABSTAIN = "ABSTAIN", "Can't tell"
    ERROR = "ERROR", "ERROR"


class JudgeConfig(models.Model):
    class Backend(models.TextChoices):
        OPENAI = "openai", "OpenAI-compatible chat completions"
        ANTHROPIC = "anthropic", "Anthropic messages"
        INSTRUMENT = "instrument", "Deterministic instruments (no model)"
        IMPORTED = "imported", "Verdicts produced elsewhere"

    class Mode(models.TextChoices):
        PER_OUTPUT = "per_output", "One call per output, grading every criterion"
        PER_CRITERION = "per_criterion", "One call per criterion"

    workspace = models.ForeignKey("evals.Workspace", on_delete=models.PROTECT, related_name="judge_configs")
    name = models.CharField(max_length=200, validators=[validate_name])
    backend = models.CharField(max_length=16, choices=Backend.choices)
    model_id = models.CharField(max_length=200, blank=True)
    base_url = models.CharField(max_length=500, blank=True)
    # The NAME of the environment variable that holds the key; the key itself is never stored.
    api_key_env = models.CharField(max_length=100, blank=True)
    temperature = models.FloatField(default=0.0)
    max_output_tokens = models.PositiveIntegerField(default=1024)
    mode = models.CharField(max_length=16, choices=Mode.choices, default=Mode.PER_OUTPUT)
    samples = models.PositiveSmallIntegerField(default=1)
    max_concurrency = models.PositiveSmallIntegerField(default=4)
    timeout_s = models.FloatField(default=60.0)
    max_retries = models.PositiveSmallIntegerField(default=4)
    prompt_template_version = models.CharField(max_length=50, default="v1")
    # For the instrument backend: {criterion_key: {"kind": "...", ...}}.
    instruments = models.JSONField(default=dict, blank=True)
    # Judge-only guidance (judging/guidance.py, docs/judging.md "Improving a judge"): per criterion key of
    # `guidance_rubric_version`, {"instructions": str, "examples": [{output_id, split, input, response,
    # outcome, quote}]}. The people's rubric never sees it; the judge's prompt carries it as delimited data.
    guidance = models.JSONField(default=dict, blank=True)
    guidance_rubric_version = models.ForeignKey(
        RubricVersion, null=True, blank=True, on_delete=models.PROTECT, related_name="judge_guidance"
    )
    # Versions: a config derived with new guidance is a new row (`derived_from` the one it was made from, the
    # old one unchanged); `family` is the first version's name, `version` counts from 1, and a derived
    # version is named FAMILY-vN (never NAME@N: that is how a rubric version is named).
    derived_from = models.ForeignKey(
        "self", null=True, blank=True, on_delete=models.PROTECT, related_name="derived_versions"
    )
    family = models.CharField(max_length=200, blank=True)
    version = models.PositiveSmallIntegerField(default=1)
    content_hash = models.CharField(max_length=64, editable=False)
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.PROTECT, related_name="+"
    )
    created_at = models.DateTimeField(auto_now_add=True)

    # What a lead sets, besides the name: the judge config form, add_judge and a derived version all use these.
    SETTINGS = (
        "backend",
        "model_id",
        "base_url",
        "api_key_env",
        "temperature",
        "max_output_tokens",
        "mode",
        "samples",
        "max_concurrency",
        "timeout_s",
        "max_retries",
        "prompt_template_version",
        "instruments",
    )
    HASHED_FIELDS = (
        "backend",
        "model_id",
        "base_url",
        "api_key_env",
        "temperature",
        "max_output_tokens",
        "mode",
        "samples",
        "prompt_template_version",
        "instruments",
    )

    workspace_path = "workspace"

    class Meta:
        constraints = [models.UniqueConstraint(fields=["workspace", "name"], name="judge_name_unique_in_workspace")]
        ordering = ["name"]

    def __str__(self) -> str:
        return self.name

    def compute_hash(self) -> str:
        payload = {f: getattr(self, f) for f in self.HASHED_FIELDS}
        if self.guidance:
            # Only when there is guidance, so every config without it keeps the hash (and cache keys) it had.
            payload["guidance"] = self.guidance
            payload["guidance_rubric_version"] = self.guidance_rubric_version_id
        return hashlib.sha256(json.dumps(payload, sort_keys=True, default=str).encode()).hexdigest()

    @property
    def family_name(self) -> str:
        """The name its versions share: the first version's name."""
        return self.family or self.name

    @property
    def has_examples(self) -> bool:
        return any(g.get("examples") for g in self.guidance.values())

    def example_output_ids(self) -> set[int]:
        """The outputs its few-shot examples were taken from: they must never measure it."""
        return {int(e["output_id"]) for g in self.guidance.values() for e in g.get("examples", [])}

    @property
    def takes_imports(self) -> bool:
        """Only an imported config holds verdicts from imports and pushes. A model or instrument config's verdicts
        come only from its own judge runs, so nothing sent from outside can speak in the name of a calibrated
        instrument (docs/security.md, "Verdict provenance")."""
        return self.backend == self.Backend.IMPORTED

    @property
    def reads_instructions(self) -> bool:
        """False for instruments: they read no text, so guidance gives them examples only (as precedents)."""
        return self.backend != self.Backend.INSTRUMENT

    def is_in_use(self) -> bool:
        """True once any run or verdict refers to this config: from then on it is a fixed instrument."""
        return self.runs.exists() or self.verdicts.exists()

    def save(self, *args, **kwargs):
        self.content_hash = self.compute_hash()
        if self.pk:
            old = JudgeConfig.objects.filter(pk=self.pk).first()
            if old is not None and _field_values(old) != _field_values(self) and old.is_in_use():
                raise JudgeConfigLocked(
                    f"judge config {old.name} is in use and cannot change; create a new judge config instead"
                )
        super().save(*args, **kwargs)


def _field_values(config: JudgeConfig) -> dict:
    return {f.attname: getattr(config, f.attname) for f in config._meta.concrete_fields}


class JudgeRunQuerySet(models.QuerySet):
    def active(self) -> JudgeRunQuerySet:
        """Runs still going: queued or running (JudgeRun.ACTIVE)."""
        return self.filter(status__in=JudgeRun.ACTIVE)


class JudgeRun(models.Model):
    """Eval set (optionally one agent version) x rubric version x judge config."""

    class Status(models.TextChoices):
        QUEUED = "queued", "Queued"
        RUNNING = "running", "Running"
        DONE = "done", "Done"
        CANCELLED = "cancelled", "Cancelled"
        FAILED = "failed", "Failed"

    class Mode(models.TextChoices):
        CELERY = "celery", "On Celery workers"
        IN_PROCESS = "in_process", "In one process"
        IMPORT = "import", "Imported"

    class ImportedVia(models.TextChoices):
        """How an imported run came in (blank for a judge run): who could write it, for the gate's record."""

        COMMAND = "command", "manage.py import_verdicts"
        PUSH = "push", "Pushed over the API"
        PAGE = "page", "Imported on the Import page"

    eval_set = models.ForeignKey(EvalSet, on_delete=models.CASCADE, related_name="judge_runs")
    agent_version = models.CharField(max_length=200, blank=True, validators=[validate_name])
    rubric_version = models.ForeignKey(RubricVersion, on_delete=models.PROTECT, related_name="judge_runs")
    judge_config = models.ForeignKey(JudgeConfig, on_delete=models.PROTECT, related_name="runs")
    status = models.CharField(max_length=16, choices=Status.choices, default=Status.QUEUED)
    started_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.PROTECT, related_name="+"
    )
    created_at = models.DateTimeField(auto_now_add=True)
    started_at = models.DateTimeField(null=True, blank=True)
    finished_at = models.DateTimeField(null=True, blank=True)
    error = models.TextField(blank=True)
    mode = models.CharField(max_length=16, choices=Mode.choices, default=Mode.CELERY)
    # The name a person gave an imported run (import_verdicts --new-run): a second opinion kept as its own run.
    label = models.CharField(max_length=200, blank=True, validators=[validate_name])
    # Provenance of an imported run (mode "import"): the way it came in and the file's name as given ("records"
    # for a JSON push). Which token pushed it is api's VerdictPush (tokens live there).
    imported_via = models.CharField(max_length=16, choices=ImportedVia.choices, blank=True)
    source_name = models.CharField(max_length=255, blank=True)
    # Planned when the run is created: work items (model calls, or instrument evaluations) and verdict rows.
    total_items = models.PositiveIntegerField(default=0)
    expected_verdicts = models.PositiveIntegerField(default=0)
    # An arm of a probe run (judging/probes/): the outputs as they are ("original") or through one probe.
    # Its verdicts never count for calibration or the gate (Verdict.probe).
    probe_run = models.ForeignKey(
        "ProbeRun", null=True, blank=True, on_delete=models.CASCADE, related_name="judge_runs"
    )
    probe = models.CharField(max_length=64, blank=True)
    probe_version = models.PositiveSmallIntegerField(null=True, blank=True)
    # A run over one part of a gold split only (GoldSplit.DEVELOPMENT or HELD_OUT); blank: every output in scope.
    split_part = models.CharField(max_length=16, blank=True)

    ACTIVE = (Status.QUEUED, Status.RUNNING)

    workspace_path = "eval_set__workspace"

    objects = JudgeRunQuerySet.as_manager()

    class Meta:
        ordering = ["-created_at"]

    def __str__(self) -> str:
        return f"run {self.pk} ({self.status})"

    @property
    def is_active(self) -> bool:
        return self.status in self.ACTIVE


class RunItem(models.Model):
    """One unit of work of a run: one output (one criterion in per-criterion mode) for one sample.

    Lanes claim items with a lease they keep renewing; an item whose lane died is
    claimed again once its lease runs out. Done items never run again.
    """

    class State(models.TextChoices):
        PENDING = "pending", "Pending"
        CLAIMED = "claimed", "Claimed"
        DONE = "done", "Done"

    run = models.ForeignKey(JudgeRun, on_delete=models.CASCADE, related_name="items")
    output = models.ForeignKey(Output, on_delete=models.CASCADE, related_name="+")
    # Set in per-criterion mode only; otherwise the item grades every criterion of the rubric version.
    criterion = models.ForeignKey(Criterion, null=True, blank=True, on_delete=models.PROTECT, related_name="+")
    sample = models.PositiveSmallIntegerField(default=0)
    state = models.CharField(max_length=16, choices=State.choices, default=State.PENDING)
    lane = models.CharField(max_length=64, blank=True)
    lease_until = models.DateTimeField(null=True, blank=True)
    claims = models.PositiveSmallIntegerField(default=0)
    # What the item cost: model calls made (retries included) and the tokens they used. A cache hit costs nothing.
    model_calls = models.PositiveIntegerField(default=0)
    tokens_in = models.PositiveIntegerField(default=0)
    tokens_out = models.PositiveIntegerField(default=0)
    cache_hit = models.BooleanField(default=False)
    finished_at = models.DateTimeField(null=True, blank=True)

    workspace_path = "run__eval_set__workspace"

    class Meta:
        indexes = [
            models.Index(fields=["run", "state"]),
            # Claiming takes the lowest pending ids of a run: this index holds only what is left to do.
            models.Index(fields=["run", "id"], condition=models.Q(state="pending"), name="runitem_pending"),
        ]

    def __str__(self) -> str:
        return f"item {self.pk} of run {self.run_id} ({self.state})"


class ErrorKind(models.TextChoices):
    """Why a verdict is ERROR. The first two come from an answer the judge gave; the next five from no answer
    (the provider's failure after the retries, or a request refused). INTERNAL is never an outage or a bug of
    ours (those fail the run: judging/lane.py): only an item of a probe arm whose probed transcript is missing,
    and verdicts stored before that rule."""

    PARSE = "parse", "Unusable answer"
    REFUSAL = "refusal", "Refused"
    TIMEOUT = "timeout", "Timed out"
    RATE_LIMIT = "rate_limit", "Rate limited"
    SERVER = "server", "Server error"
    CONNECTION = "connection", "Connection failed"
    REJECTED = "rejected", "Request rejected"
    INTERNAL = "internal", "Internal error"
    IMPORTED = "imported", "Imported as ERROR"


# A verdict is reused from the cache only when it came from an answer the judge actually gave:
# asking again would most likely get the same answer. Transport failures say nothing about the request.
CACHEABLE_ERROR_KINDS = ("", ErrorKind.PARSE, ErrorKind.REFUSAL)


class VerdictQuerySet(models.QuerySet):
    def counted(self) -> VerdictQuerySet:
        """The verdicts that count: not a probe arm's (those judged a changed transcript, not the output)."""
        return self.filter(probe="")


class Verdict(models.Model):
    """One judge answer for one criterion of one output (one row per sample).

    latency_ms, tokens_in and tokens_out describe the model call that produced the verdict (in
    per-output mode one call answers every criterion, so its verdicts share these figures); on a
    cache hit they are the original call's and nothing was spent.
    """

    run = models.ForeignKey(JudgeRun, on_delete=models.CASCADE, related_name="verdicts")
    output = models.ForeignKey(Output, on_delete=models.CASCADE, related_name="verdicts")
    rubric_version = models.ForeignKey(RubricVersion, on_delete=models.PROTECT, related_name="verdicts")
    criterion = models.ForeignKey(Criterion, on_delete=models.PROTECT, related_name="verdicts")
    judge_config = models.ForeignKey(JudgeConfig, on_delete=models.PROTECT, related_name="verdicts")
    judge_config_hash = models.CharField(max_length=64)
    model_id = models.CharField(max_length=200, blank=True)
    sample = models.PositiveSmallIntegerField(default=0)
    outcome = models.CharField(max_length=16, choices=VerdictOutcome.choices)
    evidence = models.TextField(blank=True)
    # None when there was nothing to check (ERROR, or no quote asked for).
    evidence_found = models.BooleanField(null=True)
    error_reason = models.TextField(blank=True)
    error_kind = models.CharField(max_length=16, choices=ErrorKind.choices, blank=True)
    raw_output = models.TextField(blank=True)
    request_hash = models.CharField(max_length=64, blank=True, db_index=True)
    # sha256 of (rubric version hash, judge config hash, request hash, sample): the cache lookup key.
    cache_key = models.CharField(max_length=64, blank=True, db_index=True)
    attempts = models.PositiveSmallIntegerField(default=0)
    latency_ms = models.IntegerField(null=True, blank=True)
    tokens_in = models.IntegerField(null=True, blank=True)
    tokens_out = models.IntegerField(null=True, blank=True)
    cache_hit = models.BooleanField(default=False)
    created_at = models.DateTimeField(auto_now_add=True)
    # The arm of a probe run this verdict belongs to (its run's `probe`); "" for every verdict that counts.
    # Readers of the judge's verdicts take only these: Verdict.objects.counted().
    probe = models.CharField(max_length=64, blank=True, default="")

    workspace_path = "output__case__eval_set__workspace"

    objects = VerdictQuerySet.as_manager()

    class Meta:
        constraints = [
            models.UniqueConstraint(
                fields=["run", "output", "criterion", "sample"], name="one_verdict_per_run_output_criterion_sample"
            )
        ]
        indexes = [models.Index(fields=["judge_config", "rubric_version"])]

    def __str__(self) -> str:
        return f"{self.outcome} (sample {self.sample})"


class ProbeRun(models.Model):
    """A robustness check of a judge config: the same outputs judged as they are and through each probe.

    Each probe, and the outputs as they are, is one JudgeRun (an arm) over the same outputs, so a probe
    run uses the judge machinery as it is: Celery lanes, the concurrency bound, the cache, ERROR. Its
    status and results are read from the arms (judging/probes/results.py), never stored.
    """

    eval_set = models.ForeignKey(EvalSet, on_delete=models.CASCADE, related_name="probe_runs")
    agent_version = models.CharField(max_length=200, blank=True, validators=[validate_name])
    rubric_version = models.ForeignKey(RubricVersion, on_delete=models.PROTECT, related_name="probe_runs")
    judge_config = models.ForeignKey(JudgeConfig, on_delete=models.PROTECT, related_name="probe_runs")
    # The probes as they were when the run was planned, in run order: name, version, summary, and the
    # criterion keys each was neutral and meaningful for. Results are read against this, not the registry.
    plan = models.JSONField(default=list)
    sample_size = models.PositiveIntegerField(null=True, blank=True)  # --sample N; None: every output
    outputs = models.PositiveIntegerField(default=0)  # how many outputs were probed
    mode = models.CharField(max_length=16, choices=JudgeRun.Mode.choices, default=JudgeRun.Mode.CELERY)
    started_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.PROTECT, related_name="+"
    )
    created_at = models.DateTimeField(auto_now_add=True)

    workspace_path = "eval_set__workspace"

    class Meta:
        ordering = ["-created_at", "-id"]

    def __str__(self) -> str:
        return f"probe run {self.pk}"


class ProbedOutput(models.Model):
    """An output's transcript as one probe changed it: what the judge was shown in that arm instead.

    Computed once, when the probe run is planned, so workers need no probe code and the examples page
    shows exactly what was judged.
    """

    run = models.ForeignKey(JudgeRun, on_delete=models.CASCADE, related_name="probed_outputs")
    output = models.ForeignKey(Output, on_delete=models.CASCADE, related_name="+")
    input = models.TextField()
    tool_calls = models.JSONField(default=list, blank=True)
    response = models.TextField()

    workspace_path = "output__case__eval_set__workspace"

    class Meta:
        constraints = [models.UniqueConstraint(fields=["run", "output"], name="one_probed_output_per_arm")]

    def __str__(self) -> str:
        return f"output {self.output_id} probed in run {self.run_id}"


class GoldSplit(models.Model):
    """The development and held-out split of one eval set's gold items under one rubric version (issue 23).

    Fixed once, when the first improvement of a judge on this eval set starts (judging/gold_splits.py):
    seeded, stratified by each output's number of FAIL golds, and stored, so it never moves. Few-shot
    examples come only from the development split; the report and the gate of a judge with examples read
    the held-out split. Gold that arrives later is assigned from the seed and the output id alone
    (gold_splits.later_part), so it too never moves. docs/calibration.md, "Development and held-out splits".
    """

    DEVELOPMENT = "development"
    HELD_OUT = "held_out"
    PARTS = (DEVELOPMENT, HELD_OUT)

    eval_set = models.ForeignKey(EvalSet, on_delete=models.CASCADE, related_name="gold_splits")
    rubric_version = models.ForeignKey(RubricVersion, on_delete=models.PROTECT, related_name="gold_splits")
    seed = models.BigIntegerField()
    development = models.JSONField(default=list)  # output ids, ascending
    held_out = models.JSONField(default=list)  # output ids, ascending
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.PROTECT, related_name="+"
    )
    created_at = models.DateTimeField(auto_now_add=True)

    workspace_path = "eval_set__workspace"

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["eval_set", "rubric_version"], name="one_gold_split_per_eval_set_rubric")
        ]

    def __str__(self) -> str:
        return f"gold split of {self.eval_set_id} under {self.rubric_version_id}"


class HoldoutLook(models.Model):
    """One look at a split's held-out figures: who asked, when, and which judge config versions it compared.

    Each look spends some of the held-out split's honesty (docs/calibration.md, "Why looks are counted"), so
    looks are never free and never forgotten: the count is shown wherever held-out figures are.
    """

    split = models.ForeignKey(GoldSplit, on_delete=models.CASCADE, related_name="looks")
    looked_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.PROTECT, related_name="+"
    )
    looked_at = models.DateTimeField(auto_now_add=True)
    # The versions compared, as they were: [{"id", "name", "content_hash"}], in the order asked for.
    configs = models.JSONField(default=list)
    # Where the look came from: "api", "command", "page".
    via = models.CharField(max_length=16, blank=True)

    workspace_path = "split__eval_set__workspace"

    class Meta:
        ordering = ["-looked_at", "-id"]

    def __str__(self) -> str:
        return f"look {self.pk} at split {self.split_id}"
