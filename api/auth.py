"""Who is calling the API: a bearer token (GateToken, api/models.py: the one token concept), checked for
each endpoint's scope and for the rubric version and eval sets the lead limited it to.

Session cookies are not accepted (the API needs no CSRF token because of that): a browser that
is logged in is not a CI system. A missing, unknown or revoked token is a 401; a token without
the endpoint's scope, or asking about another rubric version or an eval set its pattern does
not match, a 403. Each message says what to do, and names only what the caller named or the
token's own scope, never what else exists.

A token belongs to one workspace (issue 36), and that workspace becomes the request's (`request.workspace`, as the
session gives it to a page): every endpoint finds names and ids in it only, so an object of another workspace
answers exactly as a missing one.
"""

from __future__ import annotations

import fnmatch

from django.db.models import QuerySet
from django.http import HttpRequest
from django.utils import timezone
from ninja.security import HttpBearer

from evals.models import Workspace

from .models import GateToken, TokenScope, hash_token

NO_TOKEN = "send a token as 'Authorization: Bearer <token>' (a lead creates one on the gate page, /api/gates/)"


def no_token(scope: str) -> str:
    return (
        f"send a valid {scope} token as 'Authorization: Bearer <token>' (a lead creates one on the gate page, "
        "/api/gates/)"
    )


class ApiError(Exception):
    """An answer other than success: the HTTP status, a message for people, and any details."""

    def __init__(self, status: int, message: str, **extra) -> None:
        super().__init__(message)
        self.status = status
        self.message = message
        self.extra = extra


class TokenAuth(HttpBearer):
    """ninja's bearer scheme (so the OpenAPI schema declares it) with our messages, for one scope.

    The scope is checked here, before ninja reads the parameters and body, so a token without it
    learns that first, whatever it sent.
    """

    # The security scheme's words in the OpenAPI schema, which Swagger UI shows in its Authorize dialog.
    openapi_bearerFormat = "icw_..."
    openapi_description = (
        "Send 'Authorization: Bearer <token>', e.g. 'Authorization: Bearer icw_...': a token a lead creates on the "
        "gate page (/api/gates/, Gate tokens for CI) with the endpoint's scope (push, judge, report, audit or "
        "gate). Here, paste the token itself (icw_...) without the word Bearer."
    )

    def __init__(self, scope: str) -> None:
        super().__init__()
        self.scope = scope

    def __call__(self, request: HttpRequest) -> GateToken:
        return self.authenticate(request, bearer_secret(request) or "")

    def authenticate(self, request: HttpRequest, token: str) -> GateToken:
        tokens = GateToken.objects.select_related("rubric_version__rubric", "workspace")
        found = checked_token(token, self.scope, no_token=no_token(self.scope), tokens=tokens)
        GateToken.objects.filter(pk=found.pk).update(last_used_at=timezone.now())
        # The token's workspace is the request's: a call never reaches beyond it, whatever the session says.
        request.workspace = found.workspace  # type: ignore[attr-defined]
        return found


def bearer_secret(request: HttpRequest) -> str | None:
    """The token of 'Authorization: Bearer <token>' ("" when the header names no token), None for no bearer header."""
    scheme, _, secret = request.headers.get("Authorization", "").partition(" ")
    return secret.strip() if scheme.lower() == "bearer" else None


# How a refusal words a scope whose name is not a verb, and what else a token with it needs.
_SCOPE_WORDS: dict[str, tuple[str, str]] = {
    TokenScope.TRACES: ("send traces", ", bound to the eval set the traces go into")
}


def checked_token(secret: str, scope: str, *, no_token: str, tokens: QuerySet[GateToken]) -> GateToken:
    """The one token check (the JSON API, the HTTP gate and the OTLP receiver call it): the active token whose
    secret this is, if it may act in `scope`. ApiError 401 for a missing, unknown or revoked token (`no_token`
    says how to send one), 403 for a token without the scope.
    """
    if not secret:
        raise ApiError(401, no_token)
    found = tokens.filter(token_hash=hash_token(secret)).first()
    if found is None:
        raise ApiError(401, f"unknown token; {no_token}")
    if not found.is_active:
        raise ApiError(401, "this token was revoked; ask a lead for a new one")
    # A traces token without a bound eval set of its own workspace (not something the page makes) has nowhere to
    # put its spans.
    unbound = scope == TokenScope.TRACES and not found.sends_traces_home()
    if not found.allows(scope) or unbound:
        action, needs = _SCOPE_WORDS.get(scope, (scope, ""))
        raise ApiError(
            403,
            f"this token may not {action} (its scopes: {', '.join(found.scopes) or 'none'}); "
            f"a lead can create a token with the {scope} scope{needs}",
        )
    return found


class TokenHttpRequest(HttpRequest):
    """A request to an endpoint behind TokenAuth: django-ninja sets `auth` to the token it returned, and TokenAuth
    sets `workspace` to the token's."""

    auth: GateToken
    workspace: Workspace


def check_scope(request: TokenHttpRequest, *, eval_set: str, rubric: str | None = None) -> None:
    """ApiError 403 unless the eval set (and rubric version, when the call names one) are within the token's."""
    token = request.auth
    if rubric is not None and rubric != token.rubric_version.ref:
        raise ApiError(403, f"this token is for {token.rubric_version.ref} only, not {rubric!r}")
    # Case-sensitive like the names themselves, as the gate matches them.
    if not fnmatch.fnmatchcase(eval_set, token.eval_set_pattern):
        raise ApiError(403, f"this token is for eval sets whose names match {token.eval_set_pattern!r} only")


def check_judge(request: TokenHttpRequest, *, judge: str) -> None:
    """ApiError 403 unless the token names `judge` among the imported judge configs it may push verdicts into.

    A model or instrument config can never be named (the lead's form refuses it, and the importer refuses to
    write into one anyway): its verdicts come only from its own judge runs.
    """
    token = request.auth
    if token.may_push_verdicts_into(judge):
        return
    if not token.judges:
        raise ApiError(
            403,
            f"this token may not push verdicts into judge config {judge!r}: it names no judge configs to push "
            "verdicts into; a lead can create a push token that names the imported judge configs it may write",
        )
    raise ApiError(
        403,
        f"this token may push verdicts only into {', '.join(repr(j) for j in token.judges)}, not {judge!r}; "
        "a lead can create a push token that names it",
    )
