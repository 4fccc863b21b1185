"""Plain forms for the calibration pages and the HTTP gate; the domain functions re-check everything."""

from __future__ import annotations

import math

from django import forms

from judging.models import JudgeConfig
from labeling.models import EvalSet, Rubric, RubricVersion

from .gate import DEFAULT_CONFIDENCE, DEFAULT_MAX_ERROR_RATE, DEFAULT_MIN_PASS_RATE, GateThresholds

REASON_HELP = "Why, in words someone can check later (this is kept with the approval)."


class ReasonForm(forms.Form):
    reason = forms.CharField(widget=forms.Textarea(attrs={"rows": 2}), help_text=REASON_HELP)

    def clean_reason(self) -> str:
        reason = self.cleaned_data["reason"].strip()
        if not reason:
            raise forms.ValidationError("Write a reason.")
        return reason


class GatingForm(ReasonForm):
    """Mark one criterion as gating. The choices carry each criterion's tier on this report."""

    criterion = forms.ChoiceField()
    override = forms.BooleanField(
        required=False, label="Override: gate on it although it is not in the gate tier (the reason must say why)"
    )

    field_order = ["criterion", "override", "reason"]

    def __init__(self, *args, rows=(), **kwargs):
        super().__init__(*args, **kwargs)
        self.tiers = {r.criterion: r.tier for r in rows if not r.gating}
        self.fields["criterion"].choices = [("", "choose a criterion")] + [
            (key, f"{key} ({tier})") for key, tier in self.tiers.items()
        ]

    def clean(self):
        data = super().clean()
        key = data.get("criterion")
        if key and self.tiers.get(key) != "gate" and not data.get("override"):
            self.add_error(
                "criterion",
                f"{key} is in the {self.tiers.get(key)} tier: only gate-tier criteria can gate. Tick override and "
                "write why if you must.",
            )
        return data


class CompareForm(forms.Form):
    eval_set = forms.ModelChoiceField(EvalSet.objects.all(), label="Calibration eval set")
    left_rubric = forms.ModelChoiceField(RubricVersion.objects.select_related("rubric"), label="Rubric version")
    left_judge = forms.ModelChoiceField(JudgeConfig.objects.all(), label="Judge config")
    right_rubric = forms.ModelChoiceField(RubricVersion.objects.select_related("rubric"), label="Rubric version")
    right_judge = forms.ModelChoiceField(JudgeConfig.objects.all(), label="Judge config")

    def clean(self):
        data = super().clean()
        left = (data.get("left_rubric"), data.get("left_judge"))
        right = (data.get("right_rubric"), data.get("right_judge"))
        if None not in left and left == right:
            raise forms.ValidationError("Both sides are the same: pick another judge config or rubric version.")
        return data


class TokenForm(forms.Form):
    project = forms.CharField(max_length=200, help_text="Who uses the token, e.g. the CI pipeline's name.")
    rubric = forms.ModelChoiceField(Rubric.objects.all(), help_text="The token may only gate on this rubric.")

    def clean_project(self) -> str:
        project = self.cleaned_data["project"].strip()
        if not project:
            raise forms.ValidationError("Name the project.")
        return project


class _Rate(forms.FloatField):
    def to_python(self, value):
        value = super().to_python(value)
        if value is not None and (math.isnan(value) or math.isinf(value)):
            raise forms.ValidationError("Enter a finite number.")
        return value


class GateApiForm(forms.Form):
    """The HTTP gate's parameters, the same as the command's flags."""

    eval_set = forms.CharField(max_length=200)
    rubric = forms.CharField(max_length=310)
    judge = forms.CharField(max_length=200)
    agent_version = forms.CharField(max_length=200, required=False)
    min_pass_rate = _Rate(required=False)
    max_error_rate = _Rate(required=False)
    confidence = _Rate(required=False)

    def clean(self):
        data = super().clean()
        if self.errors:
            return data
        try:
            data["thresholds"] = GateThresholds(
                DEFAULT_MIN_PASS_RATE if data.get("min_pass_rate") is None else data["min_pass_rate"],
                DEFAULT_MAX_ERROR_RATE if data.get("max_error_rate") is None else data["max_error_rate"],
                DEFAULT_CONFIDENCE if data.get("confidence") is None else data["confidence"],
            )
        except ValueError as exc:
            raise forms.ValidationError(str(exc))
        return data
