"""Forms of the report's pages: two calibrations side by side, and disputing a gold label from a drilldown."""

from __future__ import annotations

from django import forms

from calibration.fields import WorkspaceForm
from evals.models import EvalSet, RubricVersion
from judging.models import JudgeConfig


class CompareForm(WorkspaceForm):
    eval_set = forms.ModelChoiceField(EvalSet.objects.all(), label="Calibration eval set")
    left_rubric = forms.ModelChoiceField(RubricVersion.objects.select_related("rubric"), label="Rubric version")
    left_judge = forms.ModelChoiceField(JudgeConfig.objects.all(), label="Judge config")
    right_rubric = forms.ModelChoiceField(RubricVersion.objects.select_related("rubric"), label="Rubric version")
    right_judge = forms.ModelChoiceField(JudgeConfig.objects.all(), label="Judge config")

    def clean(self):
        super().clean()  # Form.clean returns self.cleaned_data; typed as possibly None
        data = self.cleaned_data
        left = (data.get("left_rubric"), data.get("left_judge"))
        right = (data.get("right_rubric"), data.get("right_judge"))
        if None not in left and left == right:
            raise forms.ValidationError("Both sides are the same: pick another judge config or rubric version.")
        return data


class DisputeForm(forms.Form):
    """Dispute the gold label of one output of a drilldown (the criterion is the drilldown's)."""

    output = forms.IntegerField(
        min_value=1,
        error_messages={
            "required": "Reload the page: the output is missing.",
            "invalid": "Reload the page: the output is missing.",
            "min_value": "Reload the page: the output is missing.",
        },
    )
    reason = forms.CharField(
        widget=forms.Textarea(attrs={"rows": 2}),
        error_messages={"required": "Write why you doubt this gold label."},
    )
    # The gold revision the page showed (0: the annotators' gold); a newer one is not disputed unseen.
    gold_revision = forms.IntegerField(required=False, min_value=0)
