"""The admin of a lead shows the workspaces they lead, and nothing of any other (docs/security.md, "Workspaces").

A superuser (the site's administrator) sees every workspace. A staff lead's admin lists, object pages,
autocomplete, foreign-key choices and list filters are limited to the workspaces they lead: another workspace's
object id is then exactly as missing as an unknown one (the admin says "doesn't exist"), and a filter never
lists another workspace's eval sets or rubrics. Every app's ModelAdmin of a model with rows in workspaces
derives from `WorkspaceScopedAdmin`; a related-field filter is `(field, RelatedOnlyFieldListFilter)`, whose
choices are read from the (already limited) list.

A row with a `workspace` field of its own (eval sets, rubrics, judge configs) is added to the workspace in use,
shown read-only on the add page, by a lead of that workspace (a superuser counts as one); only a superuser
moves a row to another workspace on its change page.
"""

from __future__ import annotations

from django import forms
from django.contrib import admin
from django.core.exceptions import ValidationError
from django.db import models
from django.http import HttpRequest

from evals.access import has_role
from evals.models import Role, User, Workspace
from evals.workspaces import workspace_id_of, workspace_path


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


def has_own_workspace(model: type[models.Model]) -> bool:
    """The model names its workspace in a field of its own (not through a parent row)."""
    return any(field.name == "workspace" for field in model._meta.fields)


def in_workspace_form(form: type[forms.ModelForm], workspace: Workspace | None) -> type[forms.ModelForm]:
    """`form` for a model with a `workspace` field the form does not show: a new row gets `workspace`, and a
    name already taken in the row's workspace is refused in words.

    Django validates a constraint only when the form shows all its fields, so without the check below a taken
    name would pass the form and fail the save with an integrity error (a 500 instead of the form again).
    """

    class InWorkspace(form):  # type: ignore[valid-type,misc]
        def __init__(self, *args, **kwargs):
            super().__init__(*args, **kwargs)
            if self.instance.workspace_id is None and workspace is not None:
                self.instance.workspace = workspace

        def _post_clean(self) -> None:
            super()._post_clean()
            if "workspace" in self.fields or self.instance.workspace_id is None:
                return  # shown: Django has checked its constraints (an empty workspace is its own error)
            # Fields the form refused are left out, as Django does: their value is not the one to compare.
            unchecked = {field.name for field in self.instance._meta.fields} - {*self.cleaned_data, "workspace"}
            for constraint in self.instance._meta.constraints:
                if "workspace" in getattr(constraint, "fields", ()):
                    try:
                        constraint.validate(type(self.instance), self.instance, exclude=unchecked)
                    except ValidationError as refused:
                        self.add_error(None, refused)

    return InWorkspace


def one_workspace_form(form: type[forms.ModelForm]) -> type[forms.ModelForm]:
    """`form`, refusing a row whose chosen objects belong to different workspaces (a queue of one team's eval set
    under another team's rubric): a lead of two workspaces is offered both teams' rows in the choices."""

    class OneWorkspace(form):  # type: ignore[valid-type,misc]
        def clean(self):
            cleaned = super().clean()
            found: set[int] = set()
            if has_own_workspace(type(self.instance)) and self.instance.workspace_id is not None:
                found.add(self.instance.workspace_id)
            for value in (cleaned or {}).values():
                if isinstance(value, models.Model) and has_workspace(type(value)):
                    found.add(workspace_id_of(value))
            if len(found) > 1:
                raise ValidationError("The objects chosen here belong to different workspaces: choose them in one.")
            return cleaned

    return OneWorkspace


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
        # A new row goes to the workspace in use (shown, not chosen); moving a row to another workspace is the
        # site administrator's (a lead would hand it to another team).
        if has_own_workspace(self.model) and (obj is None or not request.user.is_superuser):
            return (*fields, "workspace") if "workspace" not in fields else fields
        return fields

    def get_form(self, request: HttpRequest, obj=None, change: bool = False, **kwargs):
        form = one_workspace_form(super().get_form(request, obj, change=change, **kwargs))
        if not has_own_workspace(self.model):
            return form
        return in_workspace_form(form, request.workspace)  # type: ignore[attr-defined]

    def has_add_permission(self, request: HttpRequest) -> bool:
        if not super().has_add_permission(request):
            return False
        # The new row goes to the workspace in use: only a lead of it adds one (with none in use, nobody).
        return not has_own_workspace(self.model) or has_role(request.user, request.workspace, Role.LEAD)  # type: ignore[attr-defined]
