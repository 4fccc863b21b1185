"""The members page's forms: a username and a role to add or create a member, a role to change one."""

from __future__ import annotations

from django import forms

from evals.models import Role


class MemberForm(forms.Form):
    username = forms.CharField(max_length=150)
    role = forms.ChoiceField(choices=Role.choices, initial=Role.ANNOTATOR)


class RoleForm(forms.Form):
    role = forms.ChoiceField(choices=Role.choices)
