from __future__ import annotations

from django import forms

from .models import DestinationKind


class DestinationForm(forms.Form):
    """The fields of a destination; what makes them valid together is alerts/destinations.py's."""

    name = forms.CharField(max_length=100)
    kind = forms.ChoiceField(choices=DestinationKind.choices)
    url = forms.CharField(
        label="URL",
        max_length=2000,
        required=False,
        strip=True,
        help_text="Webhooks: https://..., on the operator's host list.",
    )
    addresses = forms.CharField(
        required=False, widget=forms.Textarea(attrs={"rows": 3}), help_text="Email: one address a line."
    )
    secret_env = forms.CharField(
        max_length=100,
        required=False,
        label="Secret variable",
        help_text="Signed webhooks: the NAME of the environment variable holding the signing secret.",
    )
