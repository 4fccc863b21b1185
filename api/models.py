"""API tokens: bearer tokens a lead creates for a CI system, each allowed only the scopes it was given.

Only the SHA-256 of the secret is stored (calibration.models.hash_token, as for gate tokens); the
secret is shown once, when the token is created. The release gate itself still takes the gate
tokens of calibration (rubric-scoped); see docs/api.md.
"""

from __future__ import annotations

import secrets

from django.conf import settings
from django.db import models


class Scope(models.TextChoices):
    PUSH = "push", "Push outputs and verdicts"
    JUDGE = "judge", "Start judge runs and read their progress"
    REPORT = "report", "Read calibration reports"


class ApiToken(models.Model):
    TOKEN_PREFIX = "icwapi_"

    project = models.CharField(max_length=200)
    # A list of Scope values; JSON rather than a join table: a handful of fixed words, read with the token.
    scopes = models.JSONField(default=list)
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
        ordering = ["-created_at", "-id"]

    def __str__(self) -> str:
        return f"{self.project} ({self.hint}…: {', '.join(self.scopes)})"

    @classmethod
    def new_secret(cls) -> str:
        return cls.TOKEN_PREFIX + secrets.token_urlsafe(32)

    @property
    def is_active(self) -> bool:
        return self.revoked_at is None

    def allows(self, scope: str) -> bool:
        return scope in self.scopes
