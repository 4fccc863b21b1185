"""Changing one's own password (/accounts/password/): how a person replaces the first password a lead gave them
on the Members page (overview/members.py). Django's view: the old password, the new one twice, the validators;
the other sessions of the account end (Django's session auth hash), this one stays."""

from __future__ import annotations

from django.contrib.auth import views as auth_views
from django.contrib.messages.views import SuccessMessageMixin
from django.urls import reverse_lazy


class PasswordChangeView(SuccessMessageMixin, auth_views.PasswordChangeView):
    template_name = "registration/password_change.html"
    success_url = reverse_lazy("home")
    success_message = "Your password is changed; your other sessions have ended."
