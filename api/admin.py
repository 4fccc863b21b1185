"""The API's tokens in the admin: read-mostly, since a token is created on the gate page (where its secret is shown
once) and a push is a record."""

from __future__ import annotations

from django.contrib import admin

from evals.admin_scope import WorkspaceScopedAdmin

from .models import GateToken, VerdictPush


@admin.register(GateToken)
class GateTokenAdmin(WorkspaceScopedAdmin):
    list_display = (
        "project",
        "scopes",
        "judges",
        "rubric_version",
        "eval_set_pattern",
        "hint",
        "created_by",
        "created_at",
        "last_used_at",
        "revoked_at",
    )
    # What a token may write is decided where the form checks it (the gate page): scopes and judge configs.
    readonly_fields = ("scopes", "judges", "token_hash", "hint", "created_by", "created_at", "last_used_at")

    def has_add_permission(self, request) -> bool:
        return False  # tokens are created on the gate page, where the secret is shown once


@admin.register(VerdictPush)
class VerdictPushAdmin(WorkspaceScopedAdmin):
    """Which token pushed which run: a record, never edited."""

    list_display = ("run", "token", "created_at")

    def has_add_permission(self, request) -> bool:
        return False

    def has_change_permission(self, request, obj=None) -> bool:
        return False
