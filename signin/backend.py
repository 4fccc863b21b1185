"""The sign-in backend: mozilla-django-oidc's code flow, with the ID token checked in full.

The library makes the state, the nonce and the PKCE verifier, keeps them in the session, drops a state once its
callback came (a replayed callback finds none), exchanges the code and fetches the signing key. It leaves the
issuer and the audience unchecked (it decodes with verify_aud off and no issuer), so `verify_token` here decodes
again with both, the expiry, and the nonce. Every failure is a SignInRefused with its reason.
"""

from __future__ import annotations

import logging
from typing import Any

import jwt
import requests
from django.conf import settings
from django.contrib.auth import get_user_model
from django.core.exceptions import SuspiciousOperation
from django.db import transaction
from mozilla_django_oidc.auth import OIDCAuthenticationBackend

from .claims import person_from
from .memberships import set_memberships
from .provider import HTTP_TIMEOUT_SECONDS, discovery, library_setting
from .refusals import SignInRefused
from .role_map import describe

logger = logging.getLogger("icewater.signin")

# Seconds of disagreement between our clock and the provider's that an ID token's exp and iat may absorb.
CLOCK_LEEWAY_SECONDS = 60
# Claims a token without is refused (OpenID Connect Core 1.0, section 2).
REQUIRED_CLAIMS = ["iss", "aud", "exp", "iat", "sub"]
# Claims of the userinfo answer that describe the token, not the person: the ID token's stand.
TOKEN_CLAIMS = {"iss", "aud", "exp", "iat", "nbf", "nonce", "azp", "at_hash", "c_hash", "auth_time", "sid"}


class OIDCBackend(OIDCAuthenticationBackend):
    get_settings = staticmethod(library_setting)

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        # Nothing from the network here: Django makes every backend at every authenticate(), password ones too.
        self.UserModel = get_user_model()
        self.OIDC_RP_SIGN_ALGO = "RS256"
        self.OIDC_RP_IDP_SIGN_KEY = None

    def authenticate(self, request, **kwargs):
        if not settings.ICEWATER_OIDC_ISSUER or request is None or "code" not in request.GET:
            return None
        document = discovery(settings.ICEWATER_OIDC_ISSUER)
        self.OIDC_OP_TOKEN_ENDPOINT = document["token_endpoint"]
        self.OIDC_OP_USER_ENDPOINT = document.get("userinfo_endpoint")
        self.OIDC_OP_JWKS_ENDPOINT = document["jwks_uri"]
        self.OIDC_RP_CLIENT_ID = settings.ICEWATER_OIDC_CLIENT_ID
        self.OIDC_RP_CLIENT_SECRET = settings.ICEWATER_OIDC_CLIENT_SECRET
        return super().authenticate(request, **kwargs)

    def get_token(self, payload: dict[str, Any]) -> dict[str, Any]:
        try:
            return super().get_token(payload)
        except requests.HTTPError as exc:
            status = exc.response.status_code if exc.response is not None else "?"
            raise SignInRefused("provider-error", f"token endpoint answered {status} {_error_code(exc)}") from None
        except requests.RequestException as exc:
            raise SignInRefused("provider-unreachable", f"token endpoint: {type(exc).__name__}") from None

    def verify_token(self, token: str, **kwargs: Any) -> dict[str, Any]:
        if not isinstance(token, str) or not token:
            raise SignInRefused("missing-claim", "the token endpoint sent no ID token")
        try:
            key = self.retrieve_matching_jwk(token)
        except SuspiciousOperation:
            raise SignInRefused("bad-signature", "no published key has the ID token's kid and alg") from None
        except requests.RequestException as exc:
            raise SignInRefused("provider-unreachable", f"JWKS: {type(exc).__name__}") from None
        except (jwt.InvalidTokenError, KeyError):
            raise SignInRefused("bad-signature", "the ID token's header is unreadable") from None
        payload = decode_id_token(token, key, issuer=settings.ICEWATER_OIDC_ISSUER, client_id=self.OIDC_RP_CLIENT_ID)
        if payload.get("nonce") != kwargs.get("nonce"):
            raise SignInRefused("nonce", f"sub {payload.get('sub')!r}: the ID token's nonce is not this sign-in's")
        return payload

    def get_userinfo(self, access_token: str, id_token: str, payload: dict[str, Any]) -> dict[str, Any]:
        """The ID token's claims, completed by the userinfo endpoint's (of the same subject) when there is one."""
        claims = dict(payload)
        if not self.OIDC_OP_USER_ENDPOINT:
            return claims
        try:
            response = requests.get(
                self.OIDC_OP_USER_ENDPOINT,
                headers={"Authorization": f"Bearer {access_token}"},
                timeout=HTTP_TIMEOUT_SECONDS,
            )
            response.raise_for_status()
            info = response.json()
        except (requests.RequestException, ValueError) as exc:
            raise SignInRefused("provider-error", f"userinfo: {type(exc).__name__}") from None
        if not isinstance(info, dict) or info.get("sub") != payload["sub"]:
            # OpenID Connect Core 1.0, section 5.3.2: another subject's claims must not be used.
            raise SignInRefused("provider-error", f"userinfo's sub is not the ID token's {payload['sub']!r}")
        claims.update({name: value for name, value in info.items() if name not in TOKEN_CLAIMS})
        return claims

    def get_or_create_user(self, access_token: str, id_token: str, payload: dict[str, Any]):
        claims = self.get_userinfo(access_token, id_token, payload)
        person = person_from(
            claims,
            groups_claim=settings.ICEWATER_OIDC_GROUPS_CLAIM,
            role_map=settings.ICEWATER_OIDC_ROLE_MAP,
            require_verified_email=settings.ICEWATER_OIDC_VERIFIED_EMAIL,
        )
        with transaction.atomic():
            user = self.UserModel.objects.select_for_update().filter(username=person.username).first()
            if user is not None and not user.is_active:
                raise SignInRefused("inactive", f"user {person.username!r} is deactivated")
            if user is None:
                user = self.UserModel.objects.create_user(person.username, email=person.email)  # no password
                logger.info("sign-in made account %r", person.username)
            elif person.email and user.email != person.email:
                user.email = person.email
                user.save(update_fields=["email"])
            given = set_memberships(user, person.roles)
        logger.info("signed in with OpenID Connect: user %r as %s", person.username, describe(given))
        return user


def decode_id_token(token: str, key: Any, *, issuer: str, client_id: str) -> dict[str, Any]:
    """The verified claims of an ID token: RS256 by `key`, from `issuer`, for `client_id`, not expired."""
    try:
        payload = jwt.decode(
            token,
            key,
            algorithms=["RS256"],
            audience=client_id,
            issuer=issuer,
            leeway=CLOCK_LEEWAY_SECONDS,
            options={"require": REQUIRED_CLAIMS},
        )
    except jwt.ExpiredSignatureError:
        raise SignInRefused("expired", "the ID token's exp has passed") from None
    except jwt.ImmatureSignatureError:
        raise SignInRefused("expired", "the ID token's iat or nbf lies in the future") from None
    except jwt.InvalidAudienceError:
        raise SignInRefused("wrong-audience", f"the ID token is not addressed to client {client_id!r}") from None
    except jwt.InvalidIssuerError:
        raise SignInRefused("wrong-issuer", f"the ID token's iss is not {issuer!r}") from None
    except jwt.MissingRequiredClaimError as exc:
        raise SignInRefused("missing-claim", f"the ID token lacks {exc.claim}") from None
    except jwt.InvalidTokenError as exc:
        raise SignInRefused("bad-signature", f"the ID token does not verify ({type(exc).__name__})") from None
    audiences = payload["aud"] if isinstance(payload["aud"], list) else [payload["aud"]]
    if len(audiences) > 1 and payload.get("azp") != client_id:
        # Core 1.0, section 3.1.3.7: with several audiences, the authorized party must be us.
        raise SignInRefused("wrong-audience", f"the ID token's azp is {payload.get('azp')!r}, not {client_id!r}")
    return payload


def _error_code(exc: requests.HTTPError) -> str:
    """The OAuth error code of a refusal (invalid_grant, ...): its description may quote what was sent."""
    try:
        answer = exc.response.json() if exc.response is not None else None
    except ValueError:
        return "?"
    return str(answer.get("error", "?")) if isinstance(answer, dict) else "?"
