"""Form fields the calibration forms share: a rate in [0, 1] that refuses NaN and infinity, a rubric version
chosen by its NAME@VERSION reference, and the base of every form whose choices are one workspace's rows."""

from __future__ import annotations

import math

from django import forms

from evals.models import RubricVersion, Workspace
from evals.workspaces import in_workspace


class RateField(forms.FloatField):
    def to_python(self, value):
        value = super().to_python(value)
        if value is not None and (math.isnan(value) or math.isinf(value)):
            raise forms.ValidationError("Enter a finite number.")
        return value


class RubricVersionChoice(forms.ModelChoiceField):
    def label_from_instance(self, obj: RubricVersion) -> str:
        return f"{obj.ref} ({obj.get_status_display().lower()})"


class WorkspaceForm(forms.Form):
    """A form whose model choices are the rows of one workspace (the request's): every ModelChoiceField's queryset
    is narrowed with in_workspace, so the select lists only this workspace's rows and a posted id of another
    workspace is refused with the field's own "invalid choice" message, word for word as an id that does not
    exist (docs/security.md, "Workspaces")."""

    def __init__(self, *args, workspace: Workspace, **kwargs):
        super().__init__(*args, **kwargs)
        self.workspace = workspace
        for field in self.fields.values():  # the instance's copies: the class's querysets stay unscoped
            if isinstance(field, forms.ModelChoiceField) and field.queryset is not None:
                field.queryset = in_workspace(field.queryset, workspace)
