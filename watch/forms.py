"""The form a lead starts a watch with. watch/starting.py re-checks everything; the form only reads the fields."""

from __future__ import annotations

from django import forms

from calibration.fields import RateField, WorkspaceForm
from evals.models import Criterion, EvalSet
from judging.models import JudgeConfig


class _CriterionChoice(forms.ModelChoiceField):
    def label_from_instance(self, obj: Criterion) -> str:
        return f"{obj.key} of {obj.rubric_version.ref}"


class WatchStartForm(WorkspaceForm):
    eval_set = forms.ModelChoiceField(
        EvalSet.objects.order_by("name"),
        label="Production eval set",
        error_messages={"invalid_choice": "Choose an eval set that exists.", "required": "Choose the eval set."},
    )
    criterion = _CriterionChoice(
        Criterion.objects.select_related("rubric_version__rubric").order_by(
            "rubric_version__rubric__name", "rubric_version__version", "order"
        ),
        label="Criterion (and its rubric version)",
        error_messages={"invalid_choice": "Choose a criterion that exists.", "required": "Choose the criterion."},
    )
    judge_config = forms.ModelChoiceField(
        JudgeConfig.objects.order_by("name"),
        label="Judge config",
        error_messages={"invalid_choice": "Choose a judge config that exists.", "required": "Choose the judge."},
    )
    audit_share = RateField(
        label="Audit share",
        help_text="The share of arriving outputs drawn at random for annotators, e.g. 0.01 for 1%.",
        error_messages={"required": "Give the audit share, e.g. 0.01."},
    )
    alpha = RateField(
        required=False, label="Alpha", help_text="Each test's false-alarm probability over unlimited time (0.05)."
    )
    minimum = RateField(
        required=False, label="Minimum pass rate", help_text="Empty: the gating mark's (the release's minimum)."
    )
    tpr_lower = RateField(
        required=False, label="TPR bound", help_text="Empty: the lower end of the calibration's TPR interval."
    )
    tnr_lower = RateField(
        required=False, label="TNR bound", help_text="Empty: the lower end of the calibration's TNR interval."
    )
