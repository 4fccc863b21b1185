from __future__ import annotations

from axes.admin import AccessAttemptAdmin  # importing it registers django-axes' admin, replaced below
from axes.models import AccessAttempt
from django.contrib import admin
from django.contrib.auth.admin import UserAdmin

from .access import has_role
from .models import (
    Annotation,
    Case,
    Criterion,
    EvalSet,
    GoldLabel,
    Label,
    LabelingQueue,
    Output,
    Role,
    Rubric,
    RubricVersion,
    User,
)


@admin.register(User)
class IcewaterUserAdmin(UserAdmin):
    list_display = ("username", "role", "is_active", "is_staff", "last_login")
    list_filter = ("role", "is_active", "is_staff")
    fieldsets = UserAdmin.fieldsets + (("Icewater", {"fields": ("role",)}),)  # type: ignore[operator]
    add_fieldsets = UserAdmin.add_fieldsets + (("Icewater", {"fields": ("role",)}),)


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


@admin.register(LabelingQueue)
class LabelingQueueAdmin(admin.ModelAdmin):
    list_display = ("eval_set", "rubric_version", "is_current", "opened_by", "opened_at")
    list_filter = ("is_current",)


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
