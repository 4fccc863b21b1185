from __future__ import annotations

from axes.admin import AccessAttemptAdmin  # importing it registers django-axes' admin, replaced below
from axes.models import AccessAttempt
from django.contrib import admin
from django.contrib.auth.admin import UserAdmin
from django.core.exceptions import PermissionDenied

from evals.access import has_role
from evals.role_groups import sync_role_group

from .models import Case, Criterion, EvalSet, Membership, Output, Role, Rubric, RubricVersion, User, Workspace

# What only a superuser may set: anyone who could would make themselves (or anyone) a superuser.
PRIVILEGE_FIELDS = ("is_superuser", "is_staff", "groups", "user_permissions")


class MembershipInline(admin.TabularInline):
    model = Membership
    extra = 0
    fields = ("workspace", "role", "source")
    readonly_fields = ("source",)


@admin.register(User)
class IcewaterUserAdmin(UserAdmin):
    """Superusers manage accounts and workspaces. A lead with the admin sees and changes the accounts of the
    members of the workspaces they lead (never another lead's or a superuser's, and never their privilege flags);
    memberships themselves are managed on each workspace's Members page (the lead's) or here (a superuser's)."""

    list_display = ("username", "is_active", "is_staff", "last_login")
    list_filter = ("is_active", "is_staff")
    inlines = [MembershipInline]

    def get_queryset(self, request):
        users = super().get_queryset(request)
        if request.user.is_superuser:
            return users
        led = [pk for pk, role in request.user.workspace_roles().items() if role == Role.LEAD]
        return users.filter(memberships__workspace__in=led).distinct()

    def get_inlines(self, request, obj):
        return self.inlines if request.user.is_superuser else []

    def get_readonly_fields(self, request, obj=None):
        fields = super().get_readonly_fields(request, obj)
        return fields if request.user.is_superuser else (*fields, *PRIVILEGE_FIELDS)

    def has_change_permission(self, request, obj=None) -> bool:
        if not super().has_change_permission(request, obj):
            return False
        if obj is None or request.user.is_superuser:
            return True
        return not obj.is_superuser and Role.LEAD not in obj.workspace_roles().values()

    def save_model(self, request, obj, form, change):
        if not request.user.is_superuser and obj.is_superuser:
            raise PermissionDenied("Only a superuser makes someone a superuser.")
        super().save_model(request, obj, form, change)
        sync_role_group(obj)

    def save_related(self, request, form, formsets, change):
        super().save_related(request, form, formsets, change)
        form.instance.forget_workspace_roles()
        sync_role_group(form.instance)


@admin.register(Workspace)
class WorkspaceAdmin(admin.ModelAdmin):
    """Workspaces are the site's: superusers make and rename them (`add_workspace` does the same)."""

    list_display = ("slug", "name", "created_at")
    search_fields = ("slug", "name")

    def has_module_permission(self, request) -> bool:
        return request.user.is_superuser


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
        return has_role(request.user, request.workspace, Role.LEAD)

    def has_view_permission(self, request, obj=None) -> bool:
        return has_role(request.user, request.workspace, Role.LEAD)

    def has_delete_permission(self, request, obj=None) -> bool:
        return has_role(request.user, request.workspace, Role.LEAD)
