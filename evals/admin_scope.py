"""The admin of a lead shows the workspaces they lead, and nothing of any other (docs/security.md, "Workspaces").

A superuser (the site's administrator) sees every workspace. A staff lead's admin lists, object pages,
autocomplete, foreign-key choices and list filters are limited to the workspaces they lead: another workspace's
object id is then exactly as missing as an unknown one (the admin says "doesn't exist"), and a filter never
lists another workspace's eval sets or rubrics. Every app's ModelAdmin of a model with rows in workspaces
derives from `WorkspaceScopedAdmin`; a related-field filter is `(field, RelatedOnlyFieldListFilter)`, whose
choices are read from the (already limited) list.
"""

from __future__ import annotations

from django.contrib import admin
from django.db import models
from django.http import HttpRequest

from evals.models import Role, User
from evals.workspaces import workspace_path


def led_workspace_ids(user: User) -> list[int] | None:
    """The workspaces `user` leads; None for a superuser (every workspace, no filter)."""
    if user.is_superuser:
        return None
    return sorted(pk for pk, role in user.workspace_roles().items() if role == Role.LEAD)


def led_rows(queryset: models.QuerySet, user: User) -> models.QuerySet:
    """The rows of `queryset` in the workspaces `user` leads (all of them for a superuser)."""
    led = led_workspace_ids(user)
    if led is None:
        return queryset
    path = workspace_path(queryset.model)
    return queryset.filter(**{f"{path}_id__in" if path else "pk__in": led})


def has_workspace(model: type[models.Model]) -> bool:
    return getattr(model, "workspace_path", None) is not None


class WorkspaceScopedAdmin(admin.ModelAdmin):
    """Lists, object pages, autocomplete and foreign-key choices limited to the workspaces the person leads."""

    def get_queryset(self, request: HttpRequest) -> models.QuerySet:
        return led_rows(super().get_queryset(request), request.user)  # type: ignore[arg-type]

    def formfield_for_foreignkey(self, db_field, request: HttpRequest, **kwargs):
        field = super().formfield_for_foreignkey(db_field, request, **kwargs)
        if field is not None and has_workspace(db_field.related_model) and hasattr(field, "queryset"):
            field.queryset = led_rows(field.queryset, request.user)  # type: ignore[arg-type]
        return field

    def formfield_for_manytomany(self, db_field, request: HttpRequest, **kwargs):
        field = super().formfield_for_manytomany(db_field, request, **kwargs)
        if field is not None and has_workspace(db_field.related_model) and hasattr(field, "queryset"):
            field.queryset = led_rows(field.queryset, request.user)  # type: ignore[arg-type]
        return field

    def get_readonly_fields(self, request: HttpRequest, obj=None):
        fields = super().get_readonly_fields(request, obj)
        # Moving a row to another workspace is the site administrator's (a lead would hand it to another team).
        if not request.user.is_superuser and "workspace" in {f.name for f in self.model._meta.fields}:
            return (*fields, "workspace") if "workspace" not in fields else fields
        return fields
