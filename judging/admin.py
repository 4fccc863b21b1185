from __future__ import annotations

from django.contrib import admin

from evals.admin_scope import WorkspaceScopedAdmin

from .forms import JudgeConfigForm
from .models import GoldSplit, HoldoutLook, JudgeConfig, JudgeRun, ProbedOutput, ProbeRun, RunItem, Verdict


@admin.register(JudgeConfig)
class JudgeConfigAdmin(WorkspaceScopedAdmin):
    # The lead's form, so the admin checks what the page and add_judge check (the key and host allowlists too).
    form = JudgeConfigForm
    list_display = ("name", "version", "backend", "model_id", "mode", "samples", "content_hash")
    # Guidance and its lineage are written only by judging/guidance.py's derive_config (its checks, its split):
    # shown here, never edited.
    readonly_fields = ("content_hash", "family", "version", "derived_from", "guidance_rubric_version", "guidance")

    def save_model(self, request, obj, form, change):
        if not change:
            obj.created_by = request.user  # its workspace is the one in use (WorkspaceScopedAdmin's form)
        super().save_model(request, obj, form, change)

    def get_readonly_fields(self, request, obj=None):
        # A config that runs or verdicts use is a fixed instrument: everything is read-only.
        if obj is not None and obj.is_in_use():
            return [f.name for f in obj._meta.fields]
        return super().get_readonly_fields(request, obj)


@admin.register(JudgeRun)
class JudgeRunAdmin(WorkspaceScopedAdmin):
    list_display = ("id", "eval_set", "rubric_version", "judge_config", "status", "mode", "probe", "created_at")
    list_filter = ("status", "mode", "imported_via")


@admin.register(RunItem)
class RunItemAdmin(WorkspaceScopedAdmin):
    list_display = ("id", "run", "output", "criterion", "sample", "state", "claims", "model_calls", "cache_hit")
    list_filter = ("state",)
    raw_id_fields = ("run", "output", "criterion")


@admin.register(Verdict)
class VerdictAdmin(WorkspaceScopedAdmin):
    list_display = ("output", "criterion", "outcome", "judge_config", "sample", "cache_hit", "created_at")
    list_filter = ("outcome", "cache_hit", "error_kind")
    raw_id_fields = ("output", "run")


class ReadOnlyAdmin(WorkspaceScopedAdmin):
    """Probe runs are planned by probe_judge or the probe page, never edited: a changed plan or transcript
    would no longer be what was judged."""

    def has_add_permission(self, request) -> bool:
        return False

    def has_change_permission(self, request, obj=None) -> bool:
        return False


@admin.register(ProbeRun)
class ProbeRunAdmin(ReadOnlyAdmin):
    list_display = ("id", "eval_set", "rubric_version", "judge_config", "outputs", "sample_size", "created_at")


@admin.register(ProbedOutput)
class ProbedOutputAdmin(ReadOnlyAdmin):
    list_display = ("id", "run", "output")


class EvidenceAdmin(ReadOnlyAdmin):
    """Gold splits and held-out looks are evidence of how a judge was measured: fixed once, never edited."""

    def has_delete_permission(self, request, obj=None) -> bool:
        return False


@admin.register(GoldSplit)
class GoldSplitAdmin(EvidenceAdmin):
    list_display = ("id", "eval_set", "rubric_version", "seed", "created_by", "created_at")


@admin.register(HoldoutLook)
class HoldoutLookAdmin(EvidenceAdmin):
    list_display = ("id", "split", "looked_by", "looked_at", "via")
