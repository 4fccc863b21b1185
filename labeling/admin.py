from __future__ import annotations

from django.contrib import admin

from evals.admin_scope import WorkspaceScopedAdmin
from labeling.models import Annotation, GoldDispute, GoldLabel, Label, LabelingQueue


@admin.register(Annotation)
class AnnotationAdmin(WorkspaceScopedAdmin):
    list_display = ("output", "rubric_version", "annotator", "slot", "status", "source")
    list_filter = ("status", "source")
    raw_id_fields = ("output",)


@admin.register(Label)
class LabelAdmin(WorkspaceScopedAdmin):
    list_display = ("annotation", "criterion", "outcome", "revision", "is_current")
    raw_id_fields = ("annotation",)


@admin.register(GoldLabel)
class GoldLabelAdmin(WorkspaceScopedAdmin):
    list_display = ("output", "criterion", "outcome", "decided_by", "revision", "is_current", "decided_at")
    raw_id_fields = ("output",)


@admin.register(GoldDispute)
class GoldDisputeAdmin(WorkspaceScopedAdmin):
    list_display = ("output", "criterion", "disputed_outcome", "raised_by", "raised_at", "resolved_at")
    list_filter = ("resolved_at",)
    raw_id_fields = ("output", "resolution")


@admin.register(LabelingQueue)
class LabelingQueueAdmin(WorkspaceScopedAdmin):
    list_display = ("eval_set", "rubric_version", "is_current", "opened_by", "opened_at")
    list_filter = ("is_current", ("eval_set", admin.RelatedOnlyFieldListFilter))
