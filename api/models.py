"""The API's tokens: who may call it (GateToken, with its scopes) and which token pushed which verdicts
(VerdictPush). Their tables keep the names they had in calibration (api migration 0001 moved them without a
copy); calibration.GateResult names the token that asked the gate as "api.GateToken"."""

from __future__ import annotations

import fnmatch
import hashlib
import secrets

from django.conf import settings
from django.db import models

from evals.models import RubricVersion
from formats.models import TraceBinding
from judging.models import JudgeRun


def hash_token(token: str) -> str:
    # Tokens are 256 random bits, so a fast hash is enough (no dictionary to attack); we only ever
    # store and compare this digest.
    return hashlib.sha256(token.encode()).hexdigest()


class TokenScope(models.TextChoices):
    """What a token may do: ask the release gate, or use the JSON API's other endpoints (docs/api.md)."""

    GATE = "gate", "Ask the release gate"
    PUSH = "push", "Push outputs and verdicts"
    JUDGE = "judge", "Start judge runs and read their progress"
    REPORT = "report", "Read calibration reports"
    # Audit plans act in the name of the lead who made the token (the lead-only rule of calibration/audits/plans.py).
    AUDIT = "audit", "Start, show, extend and close audit plans"
    # Acts for the lead who made the token (who must still be an active lead): judge_guidance over HTTP.
    GUIDANCE = "guidance", "Read and derive judge guidance, read gold splits (as its lead)"
    TRACES = "traces", "Send OpenTelemetry traces to one eval set"


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

    workspace = models.ForeignKey("evals.Workspace", on_delete=models.PROTECT, related_name="tokens")
    project = models.CharField(max_length=200)
    rubric_version = models.ForeignKey(RubricVersion, on_delete=models.PROTECT, related_name="gate_tokens")
    eval_set_pattern = models.CharField(max_length=200, default=ANY_EVAL_SET)
    # TokenScope values; JSON rather than a join table: a handful of fixed words, read with the token.
    scopes = models.JSONField(default=gate_scope_only)
    # With the push scope: the names of the imported judge configs it may push verdicts into (a name that does not
    # exist yet is created, backend imported, by its first push). Never a config that runs: its verdicts come only
    # from its own judge runs. Empty: the token pushes outputs only. Names, not ids, since new ones do not exist yet.
    judges = models.JSONField(default=list, blank=True)
    # With the traces scope: the one eval set its spans go into, and how they become outputs (docs/formats.md).
    trace_binding = models.OneToOneField(
        TraceBinding, null=True, blank=True, on_delete=models.PROTECT, related_name="token"
    )
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

    workspace_path = "workspace"

    class Meta:
        db_table = "calibration_gatetoken"
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

    def sends_traces_home(self) -> bool:
        """A trace binding whose eval set is of the token's own workspace: the one place its spans may go (a
        binding that points elsewhere is treated as none: the token reaches nothing outside its workspace)."""
        binding = self.trace_binding
        return binding is not None and binding.eval_set.workspace_id == self.workspace_id

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


class VerdictPush(models.Model):
    """Which token pushed an imported run's verdicts (POST /api/verdicts): the provenance the gate reports for
    them (calibration reads it through the run's `push`). Written in the push's transaction, so a pushed run never
    exists without it."""

    run = models.OneToOneField(JudgeRun, on_delete=models.CASCADE, related_name="push")
    token = models.ForeignKey(GateToken, on_delete=models.PROTECT, related_name="pushes")
    created_at = models.DateTimeField(auto_now_add=True)

    workspace_path = "token__workspace"

    class Meta:
        db_table = "calibration_verdictpush"

    def __str__(self) -> str:
        return f"run {self.run_id} pushed with {self.token}"
