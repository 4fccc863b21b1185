"""What makes a calibration report's stored rows stale besides the labels and gold (which audits/figures_triggers.py
watches for both kinds of stored figures): a save of a judge run on the instrument (its verdicts arrive with its
progress and its end), a finished run of another config on the eval set (the price of gating with a jury reads its
verdicts) and a gating mark on its rubric version and judge (a row says whether its criterion gates).
Connected in CalibrationConfig.ready; each change is told after its commit (report/stored_report.py says the rest).
"""

from __future__ import annotations

from django.db.models import Q
from django.db.models.signals import post_delete, post_save

from calibration.audits import figures_triggers
from calibration.models import GatingMark
from calibration.report import stored_report
from judging.models import JudgeRun


def _run_saved(sender, instance: JudgeRun, **kwargs) -> None:
    where = Q(eval_set=instance.eval_set_id, rubric_version=instance.rubric_version_id)
    # A finished run also moves the other configs' reports here: their price of gating with a jury reads its verdicts
    # (report/jury_pricing.py). While it runs, only its own (its progress is saved often; the jury can wait for it).
    if instance.is_active:
        where &= Q(judge_config=instance.judge_config_id)
    stored_report.after_commit(lambda: stored_report.changed(where))


def _mark_saved(sender, instance: GatingMark, **kwargs) -> None:
    where = Q(rubric_version=instance.rubric_version_id, judge_config=instance.judge_config_id)
    stored_report.after_commit(lambda: stored_report.changed(where))


def connect() -> None:
    if stored_report.labels_changed not in figures_triggers.listeners:
        figures_triggers.listeners.append(stored_report.labels_changed)
    for signal in (post_save, post_delete):
        signal.connect(_run_saved, sender=JudgeRun, dispatch_uid=f"report-figures-run-{signal is post_save}")
        signal.connect(_mark_saved, sender=GatingMark, dispatch_uid=f"report-figures-mark-{signal is post_save}")
