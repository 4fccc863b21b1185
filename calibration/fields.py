"""Form fields the calibration forms share: a rate in [0, 1] that refuses NaN and infinity, and a rubric version
chosen by its NAME@VERSION reference."""

from __future__ import annotations

import math

from django import forms

from evals.models import RubricVersion


class RateField(forms.FloatField):
    def to_python(self, value):
        value = super().to_python(value)
        if value is not None and (math.isnan(value) or math.isinf(value)):
            raise forms.ValidationError("Enter a finite number.")
        return value


class RubricVersionChoice(forms.ModelChoiceField):
    def label_from_instance(self, obj: RubricVersion) -> str:
        return f"{obj.ref} ({obj.get_status_display().lower()})"
