"""What makes an audit plan's stored figures stale (issue 37): a label, an annotation's submission, a gold label or
a dispute on an output of the plan's eval set. Each such save, once committed, bumps the open plans' figures and
asks a worker for them (stored_figures.changed). Connected in CalibrationConfig.ready.

Signals, not calls from the labeling code: labeling sits below calibration and must not know of audits. Writes that
send no signal (bulk imports of labels, a judge run's verdicts) are not seen here: the page shows the last figures
until the next label; the gate compares the content digest, so it never decides on them either way.
"""

from __future__ import annotations

from collections.abc import Callable

from django.db.models.signals import post_delete, post_save

from calibration.audits import group_figures, stored_figures
from calibration.models import AuditPlan
from labeling.models import Annotation, GoldDispute, GoldLabel, Label

# Other stored figures that follow an eval set's labels and gold (the calibration report's: report/report_triggers.py
# adds itself in CalibrationConfig.ready), told after the commit with the lookups from a row's `eval_set` that find
# the changed output's, e.g. {"eval_set__cases__outputs": 17}.
listeners: list[Callable[[dict], None]] = []


def _open_plans(**where) -> list[int]:
    return list(AuditPlan.objects.open().filter(**where).values_list("pk", flat=True).distinct())


def _changed(where: dict, criterion: int | None = None) -> None:
    """After the commit: the open plans of the output `where` finds (of this criterion) and every listener."""
    on_criterion = {} if criterion is None else {"criterion_id": criterion}

    def tell() -> None:
        plans = _open_plans(**where, **on_criterion)
        stored_figures.changed(plans)
        group_figures.changed(plans)  # the shared decision of a group reads every one of its plans
        for listen in listeners:
            listen(where)

    stored_figures.after_commit(tell)


def _is_draft(annotation: Annotation) -> bool:
    return annotation.status != Annotation.Status.SUBMITTED


def _label_saved(sender, instance: Label, **kwargs) -> None:
    # A draft's labels count for nothing until it is submitted (which saves the annotation): no query for them.
    # The labeling code saves a draft's label with its annotation at hand, or in place without `is_current`; a
    # correction after submission retires the old label (`is_current`) and adds one to a submitted annotation.
    if kwargs.get("signal") is post_save:
        if Label.annotation.is_cached(instance):
            if _is_draft(instance.annotation):
                return
        elif kwargs.get("update_fields") is not None and "is_current" not in kwargs["update_fields"]:
            return
    _changed({"eval_set__cases__outputs__annotations": instance.annotation_id}, instance.criterion_id)


def _annotation_saved(sender, instance: Annotation, update_fields=None, **kwargs) -> None:
    if update_fields is not None and set(update_fields) <= {"reserved_until"}:
        return  # a reservation's renewal changes no label
    if kwargs.get("created") and _is_draft(instance):
        return  # a draft claimed: no label of it counts yet (one that becomes a draft again is seen)
    _changed({"eval_set__cases__outputs": instance.output_id})


def _gold_saved(sender, instance: GoldLabel | GoldDispute, **kwargs) -> None:
    _changed({"eval_set__cases__outputs": instance.output_id}, instance.criterion_id)


def connect() -> None:
    for signal in (post_save, post_delete):
        signal.connect(_label_saved, sender=Label, dispatch_uid=f"audit-figures-label-{signal is post_save}")
        signal.connect(_annotation_saved, sender=Annotation, dispatch_uid=f"audit-figures-ann-{signal is post_save}")
        for model in (GoldLabel, GoldDispute):
            uid = f"audit-figures-{model.__name__}-{signal is post_save}"
            signal.connect(_gold_saved, sender=model, dispatch_uid=uid)
