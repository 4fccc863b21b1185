from __future__ import annotations

from typing import cast

from axes.admin import AccessAttemptAdmin  # importing it registers django-axes' admin, replaced below
from axes.models import AccessAttempt
from django import forms
from django.contrib import admin

from .access import has_role
from .groups import sync_role_group
from .models import (
    Annotation,
    Case,
    Criterion,
    EvalSet,
    GoldDispute,
    GoldLabel,
    Label,
    LabelingQueue,
    Output,
    Role,
    Rubric,
    RubricVersion,
    User,
)

# What only a superuser may set: anyone who could would make themselves (or anyone) a superuser.
PRIVILEGE_FIELDS = ("is_superuser", "is_staff", "groups", "user_permissions")


@admin.register(User)
class IcewaterUserAdmin(UserAdmin):
    """Leads manage annotator and reviewer accounts (the lead group, calibration/lead_group.py); the privilege
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
        # A new form class per call: changing it is local.
        form = super().get_form(request, obj, change=change, **kwargs)
        if not request.user.is_superuser and "role" in form.base_fields:
            choices = [(value, label) for value, label in Role.choices if value != Role.LEAD]
            cast(forms.ChoiceField, form.base_fields["role"]).choices = choices
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


@admin.register(Annotation)
class AnnotationAdmin(admin.ModelAdmin):
    list_display = ("output", "rubric_version", "annotator", "slot", "status", "source")
    list_filter = ("status", "source")
    raw_id_fields = ("output",)


@admin.register(Label)
class LabelAdmin(admin.ModelAdmin):
    list_display = ("annotation", "criterion", "outcome", "revision", "is_current")
    raw_id_fields = ("annotation",)


@admin.register(GoldLabel)
class GoldLabelAdmin(admin.ModelAdmin):
    list_display = ("output", "criterion", "outcome", "decided_by", "revision", "is_current", "decided_at")
    raw_id_fields = ("output",)


@admin.register(GoldDispute)
class GoldDisputeAdmin(admin.ModelAdmin):
    list_display = ("output", "criterion", "disputed_outcome", "raised_by", "raised_at", "resolved_at")
    list_filter = ("resolved_at",)
    raw_id_fields = ("output", "resolution")


@admin.register(LabelingQueue)
class LabelingQueueAdmin(admin.ModelAdmin):
    list_display = ("eval_set", "rubric_version", "is_current", "opened_by", "opened_at")
    list_filter = ("is_current",)
