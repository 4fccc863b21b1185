"""Read-mostly admin for approvals and gate records; the product's pages are where decisions are made."""

from __future__ import annotations

from django.contrib import admin

from calibration.models import GateResult, GatingMark, GatingReview
from evals.admin_scope import WorkspaceScopedAdmin


@admin.register(GatingMark)
class GatingMarkAdmin(WorkspaceScopedAdmin):
    list_display = (
        "criterion",
        "rubric_version",
        "judge_config",
        "tier",
        "override",
        "min_pass_rate",
        "max_error_rate",
        "confidence",
        "marked_by",
        "marked_at",
        "revoked_at",
    )
    list_filter = ("override", "tier")
    # Approvals are evidence: change them through the product (revoke and mark again), not here.
    readonly_fields = [f.name for f in GatingMark._meta.fields]

    def has_add_permission(self, request) -> bool:
        return False


@admin.register(GatingReview)
class GatingReviewAdmin(WorkspaceScopedAdmin):
    list_display = ("rubric_version", "judge_config", "calibration_eval_set", "summary", "decided_by", "decided_at")
    # Like marks, decisions are evidence: recorded on the calibration report, never edited here.
    readonly_fields = [f.name for f in GatingReview._meta.fields]

    def has_add_permission(self, request) -> bool:
        return False


@admin.register(GateResult)
class GateResultAdmin(WorkspaceScopedAdmin):
    list_display = (
        "created_at",
        "decision",
        "rubric_ref",
        "judge_name",
        "eval_set_name",
        "binding_criterion",
        "source",
    )
    list_filter = ("decision", "source")
    readonly_fields = [f.name for f in GateResult._meta.fields]

    def has_add_permission(self, request) -> bool:
        return False
