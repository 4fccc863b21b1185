"""The identity provider as Icewater sees it: its discovery document, and the library's settings read from ours.

The discovery document (`ISSUER/.well-known/openid-configuration`) is read at the first sign-in, not at start-up,
so Icewater starts while the provider is down; it is kept for DISCOVERY_SECONDS per issuer, so a provider that
moves its endpoints or keys is followed within minutes. Its `issuer` must be exactly the configured one
(OpenID Connect Discovery 1.0, section 4.3): a document served for another issuer is refused.
"""

from __future__ import annotations

import time
from typing import Any

import requests
from django.conf import settings
from mozilla_django_oidc.utils import import_from_settings

from .refusals import SignInRefused

DISCOVERY_SECONDS = 300
HTTP_TIMEOUT_SECONDS = 10
# "openid email profile": the subject, the address and its verification, a username, and (at most providers, as
# a claim added to the profile or ID token) the groups.
SCOPES = "openid email profile"

_documents: dict[str, tuple[float, dict[str, Any]]] = {}


def discovery_url(issuer: str) -> str:
    return issuer.rstrip("/") + "/.well-known/openid-configuration"


def discovery(issuer: str) -> dict[str, Any]:
    kept = _documents.get(issuer)
    if kept and time.monotonic() - kept[0] < DISCOVERY_SECONDS:
        return kept[1]
    url = discovery_url(issuer)
    try:
        response = requests.get(url, timeout=HTTP_TIMEOUT_SECONDS)
        response.raise_for_status()
        document = response.json()
    except (requests.RequestException, ValueError) as exc:
        raise SignInRefused("provider-unreachable", f"{url}: {type(exc).__name__}") from None
    if not isinstance(document, dict):
        raise SignInRefused("provider-unreachable", f"{url} is not a JSON object")
    if document.get("issuer") != issuer:
        raise SignInRefused("wrong-issuer", f"{url} names issuer {document.get('issuer')!r}, not {issuer!r}")
    missing = [key for key in ("authorization_endpoint", "token_endpoint", "jwks_uri") if not document.get(key)]
    if missing:
        raise SignInRefused("provider-unreachable", f"{url} lacks {', '.join(missing)}")
    _documents[issuer] = (time.monotonic(), document)
    return document


def forget_discovery() -> None:
    """Tests start providers that come and go; a server forgets nothing but by age."""
    _documents.clear()


def library_setting(name: str, *default: Any) -> Any:
    """mozilla-django-oidc's settings, from Icewater's (which tests override) and the choices fixed here."""
    fixed: dict[str, Any] = {
        "OIDC_RP_CLIENT_ID": settings.ICEWATER_OIDC_CLIENT_ID,
        "OIDC_RP_CLIENT_SECRET": settings.ICEWATER_OIDC_CLIENT_SECRET,
        "OIDC_RP_SIGN_ALGO": "RS256",  # the algorithm every OpenID provider must offer
        "OIDC_RP_SCOPES": SCOPES,
        "OIDC_USE_PKCE": True,
        "OIDC_PKCE_CODE_CHALLENGE_METHOD": "S256",
        "OIDC_USE_NONCE": True,
        "OIDC_STORE_ID_TOKEN": True,  # the hint for the provider's logout
        "OIDC_CREATE_USER": True,
        "OIDC_TIMEOUT": HTTP_TIMEOUT_SECONDS,
        "OIDC_AUTHENTICATION_CALLBACK_URL": "oidc_callback",
        "OIDC_REDIRECT_FIELD_NAME": "next",
    }
    if name in fixed:
        return fixed[name]
    return import_from_settings(name, *default)
