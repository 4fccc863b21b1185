"""The eval set page's filter of its cases."""

from __future__ import annotations

from typing import cast

from django import forms

from evals.models import RubricVersion
from judging.models import JudgeConfig


class CaseFilterForm(forms.Form):
    """The eval set page's filters (GET). A bad value is reported, never silently dropped."""

    q = forms.CharField(required=False, max_length=200, label="Search case id and text")
    agent_version = forms.ChoiceField(required=False, label="Agent version")
    rubric_version = forms.ModelChoiceField(queryset=RubricVersion.objects.none(), required=False)
    judge = forms.ModelChoiceField(queryset=JudgeConfig.objects.none(), required=False, label="Judge config")
    show = forms.ChoiceField(required=False, label="Show")

    def __init__(self, *args, agent_versions: list[str], rubric_versions, judges, show_choices, **kwargs):
        super().__init__(*args, **kwargs)
        cast(forms.ChoiceField, self.fields["agent_version"]).choices = [("", "Every agent version")] + [
            (v, v) for v in agent_versions
        ]
        rubric_version = cast(forms.ModelChoiceField, self.fields["rubric_version"])
        rubric_version.queryset, rubric_version.empty_label = rubric_versions, None
        judge = cast(forms.ModelChoiceField, self.fields["judge"])
        judge.queryset, judge.empty_label = judges, "Any judge"
        cast(forms.ChoiceField, self.fields["show"]).choices = show_choices

    def clean(self):
        super().clean()  # Form.clean returns self.cleaned_data; typed as possibly None
        cleaned = self.cleaned_data
        if cleaned.get("show") in ("false-pass", "false-fail") and not cleaned.get("judge"):
            self.add_error("judge", "Choose a judge config: false passes and false fails are that judge's.")
        return cleaned
