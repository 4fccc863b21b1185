from __future__ import annotations

from axes.admin import AccessAttemptAdmin  # importing it registers django-axes' admin, replaced below
from axes.models import AccessAttempt
from django import forms
from django.contrib import admin
from django.contrib.auth.admin import UserAdmin
from django.core.exceptions import PermissionDenied

from evals.access import has_role
from evals.role_groups import sync_role_group

from .models import Case, Criterion, EvalSet, Output, Role, Rubric, RubricVersion, User

# What only a superuser may set: anyone who could would make themselves (or anyone) a superuser.
PRIVILEGE_FIELDS = ("is_superuser", "is_staff", "groups", "user_permissions")


@admin.register(User)
class IcewaterUserAdmin(UserAdmin):
    """Leads manage annotator and reviewer accounts (the lead group, overview/lead_permissions.py); the privilege
    flags and other leads' or superusers' accounts (their passwords above all) stay with superusers."""

    list_display = ("username", "role", "is_active", "is_staff", "last_login")
    list_filter = ("role", "is_active", "is_staff")
    fieldsets = UserAdmin.fieldsets + (("Icewater", {"fields": ("role",)}),)  # type: ignore[operator]
    add_fieldsets = UserAdmin.add_fieldsets + (("Icewater", {"fields": ("role",)}),)

    def get_readonly_fields(self, request, obj=None):
        fields = super().get_readonly_fields(request, obj)
        return fields if request.user.is_superuser else (*fields, *PRIVILEGE_FIELDS)

    def has_change_permission(self, request, obj=None) -> bool:
        if not super().has_change_permission(request, obj):
            return False
        if obj is None or request.user.is_superuser:
            return True
        return not obj.is_superuser and obj.role != Role.LEAD

    def get_form(self, request, obj=None, change=False, **kwargs):
        form = super().get_form(
            request, obj, change=change, **kwargs
        )  # a new form class per call: changing it is local
        role = form.base_fields.get("role")
        if not request.user.is_superuser and isinstance(role, forms.ChoiceField):
            role.choices = [(value, label) for value, label in Role.choices if value != Role.LEAD]
        return form

    def save_model(self, request, obj, form, change):
        if not request.user.is_superuser and (obj.role == Role.LEAD or obj.is_superuser):
            raise PermissionDenied("Only a superuser makes someone a lead or a superuser.")
        super().save_model(request, obj, form, change)
        sync_role_group(obj)


@admin.register(EvalSet)
class EvalSetAdmin(admin.ModelAdmin):
    list_display = ("name", "created_at")
    search_fields = ("name",)


@admin.register(Case)
class CaseAdmin(admin.ModelAdmin):
    list_display = ("case_id", "eval_set")
    list_filter = ("eval_set",)
    search_fields = ("case_id",)


@admin.register(Output)
class OutputAdmin(admin.ModelAdmin):
    list_display = ("case", "agent_version", "latency_ms")
    list_filter = ("agent_version", "case__eval_set")
    list_select_related = ("case",)
    raw_id_fields = ("case",)


class CriterionInline(admin.TabularInline):
    model = Criterion
    extra = 0
    # Part of the version's content hash: set in the rubric file (a different policy is a new version).
    readonly_fields = ("gold_policy",)


@admin.register(Rubric)
class RubricAdmin(admin.ModelAdmin):
    list_display = ("name", "created_at")


@admin.register(RubricVersion)
class RubricVersionAdmin(admin.ModelAdmin):
    list_display = ("__str__", "status", "approved_by", "approved_at", "content_hash")
    list_filter = ("status",)
    inlines = [CriterionInline]
    readonly_fields = ("content_hash",)


admin.site.unregister(AccessAttempt)


@admin.register(AccessAttempt)
class LoginLockoutAdmin(AccessAttemptAdmin):
    """Login lockouts (django-axes): a staff lead sees them and unlocks one by deleting its row.

    Leads get this from their role, with no permission granted by hand; the rest of axes' admin
    (the access logs) stays with superusers. The admin site itself still requires is_staff.
    """

    def has_module_permission(self, request) -> bool:
        return has_role(request.user, Role.LEAD)

    def has_view_permission(self, request, obj=None) -> bool:
        return has_role(request.user, Role.LEAD)

    def has_delete_permission(self, request, obj=None) -> bool:
        return has_role(request.user, Role.LEAD)
