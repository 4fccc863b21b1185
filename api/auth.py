"""Who is calling the API: a bearer API token, checked for each endpoint's scope.

Session cookies are not accepted (the API needs no CSRF token because of that): a browser that
is logged in is not a CI system. A missing, unknown or revoked token is a 401, a token without
the endpoint's scope a 403, each with a message that says what to do.
"""

from __future__ import annotations

from django.http import HttpRequest
from django.utils import timezone
from ninja.security import HttpBearer

from calibration.models import hash_token

from .models import ApiToken


class ApiError(Exception):
    """An answer other than success: the HTTP status, a message for people, and any details."""

    def __init__(self, status: int, message: str, **extra) -> None:
        super().__init__(message)
        self.status = status
        self.message = message
        self.extra = extra


NO_TOKEN = (
    "send an API token as 'Authorization: Bearer <token>' (a lead creates one on the API tokens page, /api/tokens/)"
)


class TokenAuth(HttpBearer):
    """ninja's bearer scheme (so the OpenAPI schema declares it) with our messages, for one scope.

    The scope is checked here, before ninja reads the parameters and body, so a token without it
    learns that first, whatever it sent.
    """

    def __init__(self, scope: str) -> None:
        super().__init__()
        self.scope = scope

    def __call__(self, request: HttpRequest) -> ApiToken:
        scheme, _, secret = request.headers.get("Authorization", "").partition(" ")
        if scheme.lower() != "bearer" or not secret.strip():
            raise ApiError(401, NO_TOKEN)
        return self.authenticate(request, secret.strip())

    def authenticate(self, request: HttpRequest, token: str) -> ApiToken:
        found = ApiToken.objects.filter(token_hash=hash_token(token)).first()
        if found is None:
            raise ApiError(401, f"unknown token; {NO_TOKEN}")
        if not found.is_active:
            raise ApiError(401, "this token was revoked; ask a lead for a new one")
        if not found.allows(self.scope):
            raise ApiError(
                403,
                f"this token may not {self.scope} (its scopes: {', '.join(found.scopes) or 'none'}); "
                f"a lead can create a token with the {self.scope} scope",
            )
        ApiToken.objects.filter(pk=found.pk).update(last_used_at=timezone.now())
        return found
