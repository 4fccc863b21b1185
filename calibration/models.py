"""Approvals and the release gate: which criteria may gate, on what evidence, and what the gate said.

An approval belongs to one rubric version and one judge config (by id and by content hash), so a
rubric edit or a judge change starts with no approvals: it is a new instrument.
"""

from __future__ import annotations

import fnmatch
import hashlib
import secrets

from django.conf import settings
from django.db import models
from django.db.models import Q

from evals.models import Criterion, EvalSet, RubricVersion
from judging.models import JudgeConfig, JudgeRun

from .policy import (
    DECIDE_ON,
    DEFAULT_CONFIDENCE,
    DEFAULT_DECIDE_ON,
    DEFAULT_MAX_ERROR_RATE,
    DEFAULT_MIN_PASS_RATE,
    GateThresholds,
)


class GatingMarkQuerySet(models.QuerySet):
    def active(self) -> GatingMarkQuerySet:
        return self.filter(revoked_at__isnull=True)

    def for_instrument(self, rubric_version: RubricVersion, judge_config: JudgeConfig) -> GatingMarkQuerySet:
        """Active marks that still apply: same rubric version and judge config, contents unchanged,
        rubric version still approved."""
        return self.active().filter(
            rubric_version=rubric_version,
            judge_config=judge_config,
            judge_config_hash=judge_config.content_hash,
            rubric_content_hash=rubric_version.content_hash,
            rubric_version__status=RubricVersion.Status.APPROVED,
        )


class GatingMark(models.Model):
    """A lead's decision that one criterion, graded by one judge config, may gate releases.

    It keeps the calibration it relied on (eval set and the report row's figures, and the probe run's
    figures), who decided, when and why, and the gate policy the lead set for it (calibration/policy.py:
    callers of the gate may only tighten it; optionally, a clean probe run is required). An override (the
    criterion was not in the `gate` tier) stays marked as one. Revoking keeps the row, so the history of
    what gated when is never lost.
    """

    rubric_version = models.ForeignKey(RubricVersion, on_delete=models.PROTECT, related_name="gating_marks")
    judge_config = models.ForeignKey(JudgeConfig, on_delete=models.PROTECT, related_name="gating_marks")
    criterion = models.ForeignKey(Criterion, on_delete=models.PROTECT, related_name="gating_marks")
    rubric_content_hash = models.CharField(max_length=64)
    judge_config_hash = models.CharField(max_length=64)
    calibration_eval_set = models.ForeignKey(EvalSet, on_delete=models.PROTECT, related_name="gating_marks")
    calibration_agent_version = models.CharField(max_length=200, blank=True)
    tier = models.CharField(max_length=16)
    override = models.BooleanField(default=False)
    reason = models.TextField()
    # The report row the decision was made on (the calibration_report JSON keys) plus computed_at.
    figures = models.JSONField(default=dict)
    # The lead's gate policy for this criterion. Marks made before it was stored got the defaults, which
    # is what the gate applied to a caller that asked for nothing.
    min_pass_rate = models.FloatField(default=DEFAULT_MIN_PASS_RATE)
    max_error_rate = models.FloatField(default=DEFAULT_MAX_ERROR_RATE)
    confidence = models.FloatField(default=DEFAULT_CONFIDENCE)
    # Which lower bound decides (policy.DECIDE_ON). The migration gave older marks the observed one, which
    # is what the gate applied when they were made; the corrected one uses `figures` (the calibration cells).
    decide_on = models.CharField(max_length=16, choices=list(DECIDE_ON.items()), default=DEFAULT_DECIDE_ON)
    # The probe results the decision relied on (calibration/probes.py): the newest complete probe run on the
    # calibration eval set, and its figures for this criterion (empty when there was none).
    probe_run = models.ForeignKey(
        "judging.ProbeRun", null=True, blank=True, on_delete=models.PROTECT, related_name="gating_marks"
    )
    probe_figures = models.JSONField(default=dict, blank=True)
    # Part of the lead's policy: the criterion may gate only while its newest probe run is clean (the gate checks).
    require_clean_probes = models.BooleanField(default=False)
    marked_by = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.PROTECT, related_name="+")
    marked_at = models.DateTimeField(auto_now_add=True)
    revoked_at = models.DateTimeField(null=True, blank=True)
    revoked_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.PROTECT, related_name="+"
    )
    revoke_reason = models.TextField(blank=True)

    objects = GatingMarkQuerySet.as_manager()

    class Meta:
        constraints = [
            models.UniqueConstraint(
                fields=["rubric_version", "judge_config", "criterion"],
                condition=Q(revoked_at__isnull=True),
                name="one_active_gating_mark",
            )
        ]
        ordering = ["criterion__order", "-marked_at"]

    def __str__(self) -> str:
        kind = "override" if self.override else self.tier
        return f"{self.criterion.key} gates {self.rubric_version_id}/{self.judge_config_id} ({kind})"

    @property
    def policy(self) -> GateThresholds:
        return GateThresholds(self.min_pass_rate, self.max_error_rate, self.confidence, self.decide_on)


class GatingReview(models.Model):
    """A lead's decision, after reading a calibration, that gating stays as it is: no new criterion gates with
    this judge config on this rubric version (and where none did, nothing gates). It answers "a finished run
    not yet decided on" as a mark or a revocation does, so a judge found unusable leaves no open question.

    It keeps what it was decided on: the calibration eval set, the contents' hashes, the criteria that gated
    at that moment and each criterion's report figures.
    """

    rubric_version = models.ForeignKey(RubricVersion, on_delete=models.PROTECT, related_name="gating_reviews")
    judge_config = models.ForeignKey(JudgeConfig, on_delete=models.PROTECT, related_name="gating_reviews")
    rubric_content_hash = models.CharField(max_length=64)
    judge_config_hash = models.CharField(max_length=64)
    calibration_eval_set = models.ForeignKey(EvalSet, on_delete=models.PROTECT, related_name="gating_reviews")
    calibration_agent_version = models.CharField(max_length=200, blank=True)
    # The criterion keys that gated with this instrument when the decision was made; empty: nothing gates.
    gating = models.JSONField(default=list, blank=True)
    # Per criterion key, the report row the decision was made on (the calibration_report JSON keys).
    figures = models.JSONField(default=dict)
    reason = models.TextField()
    decided_by = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.PROTECT, related_name="+")
    decided_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["-decided_at", "-pk"]

    def __str__(self) -> str:
        return f"{self.summary} ({self.rubric_version_id}/{self.judge_config_id})"

    @property
    def summary(self) -> str:
        return f"gating stays: {', '.join(self.gating)}" if self.gating else "nothing gates"


def hash_token(token: str) -> str:
    # Tokens are 256 random bits, so a fast hash is enough (no dictionary to attack); we only ever
    # store and compare this digest.
    return hashlib.sha256(token.encode()).hexdigest()


class TokenScope(models.TextChoices):
    """What a token may do: ask the gate here, or use the JSON API's endpoints (api/, docs/api.md)."""

    GATE = "gate", "Ask the release gate"
    PUSH = "push", "Push outputs and verdicts"
    JUDGE = "judge", "Start judge runs and read their progress"
    REPORT = "report", "Read calibration reports"


def gate_scope_only() -> list[str]:
    # Tokens made before scopes existed could only ask the gate: they keep exactly that.
    return [TokenScope.GATE.value]


class GateToken(models.Model):
    """A bearer token a CI system uses to ask the release gate and, with more scopes, the JSON API; scoped
    to what the lead chose: its scopes, one rubric version, and the eval sets whose names match a pattern
    (shell-style: `rc-*`, `*` for any). The one token concept of the gate and the API.

    Only the SHA-256 of the token is stored; the token itself is shown once, when created.
    """

    TOKEN_PREFIX = "icw_"
    ANY_EVAL_SET = "*"

    project = models.CharField(max_length=200)
    rubric_version = models.ForeignKey(RubricVersion, on_delete=models.PROTECT, related_name="gate_tokens")
    eval_set_pattern = models.CharField(max_length=200, default=ANY_EVAL_SET)
    # TokenScope values; JSON rather than a join table: a handful of fixed words, read with the token.
    scopes = models.JSONField(default=gate_scope_only)
    # With the push scope: the names of the imported judge configs it may push verdicts into (a name that does not
    # exist yet is created, backend imported, by its first push). Never a config that runs: its verdicts come only
    # from its own judge runs. Empty: the token pushes outputs only. Names, not ids, since new ones do not exist yet.
    judges = models.JSONField(default=list, blank=True)
    token_hash = models.CharField(max_length=64, unique=True)
    # The first characters, so people can tell their tokens apart without the secret.
    hint = models.CharField(max_length=16)
    created_by = models.ForeignKey(settings.AUTH_USER_MODEL, on_delete=models.PROTECT, related_name="+")
    created_at = models.DateTimeField(auto_now_add=True)
    last_used_at = models.DateTimeField(null=True, blank=True)
    revoked_at = models.DateTimeField(null=True, blank=True)
    revoked_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.PROTECT, related_name="+"
    )

    class Meta:
        ordering = ["-created_at"]

    def __str__(self) -> str:
        return f"{self.project} ({self.hint}…)"

    @classmethod
    def new_secret(cls) -> str:
        return cls.TOKEN_PREFIX + secrets.token_urlsafe(32)

    @property
    def is_active(self) -> bool:
        return self.revoked_at is None

    def allows(self, scope: str) -> bool:
        return scope in self.scopes

    def may_push_verdicts_into(self, judge_name: str) -> bool:
        return self.allows(TokenScope.PUSH) and judge_name in self.judges

    def scope_refusal(self, *, rubric_ref: str, eval_set_name: str) -> str | None:
        """Why this token may not ask about that rubric version and eval set (None: it may). It names only
        the token's own scope, never what else exists."""
        if rubric_ref != self.rubric_version.ref:
            return f"this token may only gate on {self.rubric_version.ref}"
        # Case-sensitive like the names themselves; fnmatchcase, not fnmatch, which follows the OS.
        if not fnmatch.fnmatchcase(eval_set_name, self.eval_set_pattern):
            return f"this token may only gate eval sets whose names match {self.eval_set_pattern!r}"
        return None


class GateResult(models.Model):
    """One decision of the release gate, from the command line, over HTTP or from the gate page, kept for the
    record."""

    class Decision(models.TextChoices):
        PASSED = "passed", "Passed"
        FAILED = "failed", "Failed"
        UNDECIDED = "undecided", "Cannot decide"

    class Source(models.TextChoices):
        CLI = "cli", "Command line"
        HTTP = "http", "HTTP API"
        WEB = "web", "Gate page"

    decision = models.CharField(max_length=16, choices=Decision.choices)
    source = models.CharField(max_length=8, choices=Source.choices)
    # Names as they were asked for, kept even if an object is later renamed or was unknown.
    eval_set_name = models.CharField(max_length=200)
    rubric_ref = models.CharField(max_length=310)
    judge_name = models.CharField(max_length=200)
    agent_version = models.CharField(max_length=200, blank=True)
    eval_set = models.ForeignKey(EvalSet, null=True, blank=True, on_delete=models.SET_NULL, related_name="+")
    rubric_version = models.ForeignKey(
        RubricVersion, null=True, blank=True, on_delete=models.PROTECT, related_name="gate_results"
    )
    judge_config = models.ForeignKey(
        JudgeConfig, null=True, blank=True, on_delete=models.PROTECT, related_name="gate_results"
    )
    # What the caller asked for, to tighten the lead's policy (null: nothing, the lead's values applied).
    # Results from before the policy was stored hold the thresholds the caller chose then. The thresholds
    # that applied to each criterion are in `result`.
    min_pass_rate = models.FloatField(null=True, blank=True)
    max_error_rate = models.FloatField(null=True, blank=True)
    confidence = models.FloatField(null=True, blank=True)
    binding_criterion = models.CharField(max_length=100, blank=True)
    met_count = models.PositiveIntegerField(default=0)
    gating_count = models.PositiveIntegerField(default=0)
    # The gate's JSON answer exactly as it was given.
    result = models.JSONField(default=dict)
    reason = models.TextField(blank=True)
    token = models.ForeignKey(GateToken, null=True, blank=True, on_delete=models.SET_NULL, related_name="results")
    # Who ran it on the gate page (the web source); the command line and HTTP leave it empty.
    asked_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.PROTECT, related_name="+"
    )
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["-created_at", "-id"]
        indexes = [models.Index(fields=["-created_at"])]

    def __str__(self) -> str:
        return f"gate {self.decision} for {self.rubric_ref} on {self.eval_set_name}"

    @property
    def exit_code(self) -> int:
        return {self.Decision.PASSED: 0, self.Decision.FAILED: 1}.get(self.decision, 2)


class VerdictPush(models.Model):
    """Which token pushed an imported run's verdicts (POST /api/verdicts): the provenance the gate reports for
    them. Written in the push's transaction, so a pushed run never exists without it."""

    run = models.OneToOneField(JudgeRun, on_delete=models.CASCADE, related_name="push")
    token = models.ForeignKey(GateToken, on_delete=models.PROTECT, related_name="pushes")
    created_at = models.DateTimeField(auto_now_add=True)

    def __str__(self) -> str:
        return f"run {self.run_id} pushed with {self.token}"
