from __future__ import annotations

from django import forms

from .models import Scope


class ApiTokenForm(forms.Form):
    project = forms.CharField(max_length=200, help_text="Who uses the token, e.g. the CI pipeline's name.")
    scopes = forms.MultipleChoiceField(
        choices=Scope.choices,
        widget=forms.CheckboxSelectMultiple,
        help_text="What the token may do; give it no more than its job needs.",
    )

    def clean_project(self) -> str:
        project = self.cleaned_data["project"].strip()
        if not project:
            raise forms.ValidationError("Name the project.")
        return project
