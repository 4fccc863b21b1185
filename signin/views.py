"""The sign-in's pages: start (to the provider), callback (back from it), the refusal page, and logging out.

Each answers 404 while ICEWATER_OIDC_ISSUER is unset, so an Icewater without a provider has no such pages.
"""

from __future__ import annotations

from urllib.parse import urlencode

from django.conf import settings
from django.contrib.auth import views as auth_views
from django.http import Http404, HttpRequest, HttpResponse, HttpResponseRedirect
from django.shortcuts import render
from django.urls import reverse
from django.utils.module_loading import import_string
from django.views.generic import View
from mozilla_django_oidc.views import OIDCAuthenticationCallbackView, OIDCAuthenticationRequestView

from .provider import discovery, library_setting
from .refusals import PAGES, SignInRefused, log_refusal, logger


def refused(request: HttpRequest, refusal: SignInRefused) -> HttpResponse:
    # The client address as django-axes reads it (behind proxies: ICEWATER_TRUSTED_PROXIES).
    log_refusal(refusal, import_string(settings.AXES_CLIENT_IP_CALLABLE)(request) or "?")
    headline, happened, to_do = PAGES[refusal.reason]
    context = {"headline": headline, "happened": happened, "to_do": to_do, "reason": refusal.reason}
    return render(request, "signin/refused.html", context, status=403)


class StartView(OIDCAuthenticationRequestView):
    """GET: to the provider's login page, with a fresh state, nonce and PKCE challenge in this session."""

    get_settings = staticmethod(library_setting)

    def __init__(self, **kwargs) -> None:
        # The library reads the endpoints here; ours come from the discovery document, read in get().
        View.__init__(self, **kwargs)

    def get(self, request):
        if not settings.ICEWATER_OIDC_ISSUER:
            raise Http404
        try:
            document = discovery(settings.ICEWATER_OIDC_ISSUER)
        except SignInRefused as refusal:
            return refused(request, refusal)
        self.OIDC_OP_AUTH_ENDPOINT = document["authorization_endpoint"]
        self.OIDC_RP_CLIENT_ID = settings.ICEWATER_OIDC_CLIENT_ID
        return super().get(request)


class CallbackView(OIDCAuthenticationCallbackView):
    """GET: back from the provider; signs the person in, or answers the refusal page."""

    get_settings = staticmethod(library_setting)

    def get(self, request):
        if not settings.ICEWATER_OIDC_ISSUER:
            raise Http404
        try:
            check_callback(request)
            return super().get(request)
        except SignInRefused as refusal:
            return refused(request, refusal)

    def login_failure(self):
        # Reached only when the backends gave no user after every check passed: nothing to sign in as.
        raise SignInRefused("provider-error", "no account came of the callback")


def check_callback(request: HttpRequest) -> None:
    """What the library would answer with a bare redirect or a 400, refused with a reason instead."""
    states = request.session.get("oidc_states")
    state = request.GET.get("state", "")
    if "error" in request.GET:
        if isinstance(states, dict) and state in states:
            del states[state]  # an answered request cannot be answered twice
            request.session.modified = True
        raise SignInRefused("provider-error", f"the provider answered error={request.GET['error'][:64]!r}")
    if "code" not in request.GET or not state:
        raise SignInRefused("provider-error", "the callback has no code or no state")
    if not isinstance(states, dict) or state not in states:
        raise SignInRefused("replayed", "the callback's state is not one this session is waiting for")
    # RFC 9207: a provider that names itself in the answer must be ours (a mix-up attack otherwise).
    if "iss" in request.GET and request.GET["iss"] != settings.ICEWATER_OIDC_ISSUER:
        raise SignInRefused("wrong-issuer", f"the callback's iss is {request.GET['iss'][:200]!r}")


class LogoutView(auth_views.LogoutView):
    """POST: ends the Icewater session, then the provider's where it offers an end_session_endpoint."""

    def post(self, request, *args, **kwargs):
        provider_url = provider_logout_url(request)  # before the session, holding the ID token, goes
        response = super().post(request, *args, **kwargs)
        return HttpResponseRedirect(provider_url) if provider_url else response


def provider_logout_url(request: HttpRequest) -> str | None:
    id_token = request.session.get("oidc_id_token")
    if not settings.ICEWATER_OIDC_ISSUER or not id_token:
        return None
    try:
        end_session = discovery(settings.ICEWATER_OIDC_ISSUER).get("end_session_endpoint")
    except SignInRefused as refusal:
        logger.warning("logout: the provider's session stays (%s)", refusal.detail)
        return None
    if not end_session:
        return None
    query = urlencode(
        {
            "id_token_hint": id_token,
            "client_id": settings.ICEWATER_OIDC_CLIENT_ID,
            "post_logout_redirect_uri": request.build_absolute_uri(reverse("login")),
        }
    )
    return f"{end_session}{'&' if '?' in end_session else '?'}{query}"
