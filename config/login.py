"""The login page: Django's LoginView, saying how many tries are left before django-axes locks the pair out,
and which demo accounts anyone can still sign in as (overview/demo/logins.py).

Counted by axes itself (AxesProxyHandler.get_failures, the count its lockout reads, per username and
address), against axes' own limit and cool-off, so the warning and the lockout can never disagree.
"""

from __future__ import annotations

from axes.handlers.proxy import AxesProxyHandler
from axes.helpers import get_cool_off, get_failure_limit
from django.contrib.auth import views as auth_views

from overview.demo.logins import DEFAULT_DEMO_PASSWORD, public_demo_logins

# Said once few are left: someone who mistyped once is not alarmed, someone about to be locked out is warned.
WARN_AT_MOST = 2


def attempts_left(request, username: str) -> int:
    credentials = {"username": username}
    return get_failure_limit(request, credentials) - AxesProxyHandler.get_failures(request, credentials)


class LoginView(auth_views.LoginView):
    def get_context_data(self, **kwargs):
        context = super().get_context_data(**kwargs)
        context["public_demo_logins"] = public_demo_logins()
        context["demo_password"] = DEFAULT_DEMO_PASSWORD
        form = context["form"]
        # A refused password only (a non-field error): a malformed form never reached authentication.
        refused = self.request.method == "POST" and form.errors and not any(form[f].errors for f in form.fields)
        username = form.cleaned_data.get("username", "") if refused else ""
        if username:
            left = attempts_left(self.request, username)
            if 0 < left <= WARN_AT_MOST:
                cool_off = get_cool_off(self.request)
                context["attempts_left"] = left
                context["cool_off_minutes"] = int(cool_off.total_seconds() // 60) if cool_off else None
                context["attempts_username"] = username
        return context
