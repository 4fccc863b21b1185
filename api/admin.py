"""API tokens in the admin: to look them up and revoke them; they are created on /api/tokens/."""

from __future__ import annotations

from django.contrib import admin

from .models import ApiToken


@admin.register(ApiToken)
class ApiTokenAdmin(admin.ModelAdmin):
    list_display = ("project", "scopes", "hint", "created_by", "created_at", "last_used_at", "revoked_at")
    readonly_fields = ("scopes", "token_hash", "hint", "created_by", "created_at", "last_used_at")

    def has_add_permission(self, request) -> bool:
        return False  # tokens are created on the API tokens page, where the secret is shown once
