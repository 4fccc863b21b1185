"""The login page: Django's LoginView, saying how many tries are left before django-axes locks the pair out,
and which demo accounts anyone can still sign in as (overview/demo/logins.py); with a provider set, the
company sign-in button; with ICEWATER_PASSWORD_LOGIN=0, only that button, and a password form refused here and
at the admin's login.

Counted by axes itself (AxesProxyHandler.get_failures, the count its lockout reads, per username and
address), against axes' own limit and cool-off, so the warning and the lockout can never disagree.
"""

from __future__ import annotations

from axes.handlers.proxy import AxesProxyHandler
from axes.helpers import get_cool_off, get_failure_limit
from django.conf import settings
from django.contrib import admin
from django.contrib.auth import views as auth_views
from django.http import HttpRequest, HttpResponse
from django.shortcuts import redirect, render
from django.urls import reverse
from django.utils.http import urlencode
from django.views.decorators.cache import never_cache

from overview.demo.logins import DEFAULT_DEMO_PASSWORD, public_demo_logins

# Said once few are left: someone who mistyped once is not alarmed, someone about to be locked out is warned.
WARN_AT_MOST = 2


def attempts_left(request, username: str) -> int:
    credentials = {"username": username}
    return get_failure_limit(request, credentials) - AxesProxyHandler.get_failures(request, credentials)


def password_login_refused(request: HttpRequest) -> HttpResponse:
    return render(request, "registration/password_login_off.html", status=403)


class LoginView(auth_views.LoginView):
    def post(self, request, *args, **kwargs):
        if not settings.ICEWATER_PASSWORD_LOGIN:
            return password_login_refused(request)
        return super().post(request, *args, **kwargs)

    def get_context_data(self, **kwargs):
        context = super().get_context_data(**kwargs)
        context["password_login"] = settings.ICEWATER_PASSWORD_LOGIN
        context["company_sign_in"] = bool(settings.ICEWATER_OIDC_ISSUER)
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


@never_cache
def admin_login(request: HttpRequest) -> HttpResponse:
    """The admin's login, or with password sign-in off: the login page (GET) and a refusal (POST)."""
    if settings.ICEWATER_PASSWORD_LOGIN:
        return admin.site.login(request)
    if request.method == "POST":
        return password_login_refused(request)
    next_url = request.GET.get("next") or reverse("admin:index")
    return redirect(f"{reverse('login')}?{urlencode({'next': next_url})}")
