"""Forms of the judge workbench: two versions to compare, and a criterion's judge-only guidance with its examples."""

from __future__ import annotations

from django import forms

from calibration.fields import RubricVersionChoice, WorkspaceForm
from evals.models import EvalSet, RubricVersion
from judging.models import JudgeConfig


class _JudgeVersionChoice(forms.ModelChoiceField):
    def label_from_instance(self, obj: JudgeConfig) -> str:
        return obj.name


class VersionCompareForm(WorkspaceForm):
    """Two judge config versions on one calibration eval set's gold items (the workbench's comparison)."""

    eval_set = forms.ModelChoiceField(
        EvalSet.objects.order_by("name"),
        label="Calibration eval set",
        error_messages={"invalid_choice": "Choose an eval set that exists."},
    )
    rubric_version = RubricVersionChoice(
        RubricVersion.objects.select_related("rubric"),
        label="Rubric version",
        error_messages={"invalid_choice": "Choose a rubric version that exists."},
    )
    a = _JudgeVersionChoice(
        JudgeConfig.objects.order_by("name"),
        label="A (before)",
        required=False,
        help_text="Empty: the version B was derived from.",
        error_messages={"invalid_choice": "Choose a judge config that exists for A."},
    )
    b = _JudgeVersionChoice(
        JudgeConfig.objects.order_by("name"),
        label="B (after)",
        error_messages={"invalid_choice": "Choose a judge config that exists for B."},
    )

    def clean(self):
        super().clean()  # Form.clean returns self.cleaned_data; typed as possibly None
        data = self.cleaned_data
        if data.get("a") is None and data.get("b") is not None and "a" not in self.errors:
            data["a"] = data["b"].derived_from
            if data["a"] is None:
                raise forms.ValidationError(f"{data['b'].name} is a first version: choose A to compare it with.")
        if data.get("a") is not None and data.get("a") == data.get("b"):
            raise forms.ValidationError("A and B are the same judge config: pick two versions to compare.")
        return data


class GuidanceForm(forms.Form):
    """The judge-only instructions for one criterion (the guidance editor); the examples are ExampleFormSet."""

    instructions = forms.CharField(
        required=False,
        max_length=4000,
        strip=False,
        widget=forms.Textarea(attrs={"rows": 4}),
        label="Instructions for the judge (people never see them)",
    )


class ExampleForm(forms.Form):
    """One few-shot example: an excerpt of a development output, gold's outcome and the quote that decides it."""

    output_id = forms.IntegerField(min_value=1, widget=forms.HiddenInput)
    outcome = forms.ChoiceField(choices=[("PASS", "PASS"), ("FAIL", "FAIL")])
    quote = forms.CharField(max_length=500, label="Quote (verbatim in the excerpt)")
    input = forms.CharField(required=False, max_length=4000, strip=False, widget=forms.Textarea(attrs={"rows": 2}))
    response = forms.CharField(max_length=4000, strip=False, widget=forms.Textarea(attrs={"rows": 3}))


ExampleFormSet = forms.formset_factory(ExampleForm, extra=0, can_delete=True, max_num=8, validate_max=True)
