from __future__ import annotations

from django.contrib import admin

from .models import JudgeConfig, JudgeRun, Verdict


@admin.register(JudgeConfig)
class JudgeConfigAdmin(admin.ModelAdmin):
    list_display = ("name", "backend", "model_id", "mode", "samples", "content_hash")
    readonly_fields = ("content_hash",)


@admin.register(JudgeRun)
class JudgeRunAdmin(admin.ModelAdmin):
    list_display = ("id", "eval_set", "rubric_version", "judge_config", "status", "created_at")
    list_filter = ("status",)


@admin.register(Verdict)
class VerdictAdmin(admin.ModelAdmin):
    list_display = ("output", "criterion", "outcome", "judge_config", "sample", "cache_hit", "created_at")
    list_filter = ("outcome", "cache_hit")
    raw_id_fields = ("output", "run")
