"""Role checks, enforced on the server for every view and endpoint.

Menus hide what a role cannot use, but only these checks decide. A view that
any signed-in user may open still says so explicitly with `role_required(*ALL_ROLES)`.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import wraps

from django.contrib.auth.decorators import login_required
from django.contrib.auth.models import AnonymousUser
from django.core.exceptions import BadRequest, PermissionDenied
from django.http import HttpRequest, HttpResponse, QueryDict
from django_htmx.middleware import HtmxDetails

from .models import Role, User, Workspace

ALL_ROLES = (Role.ANNOTATOR, Role.REVIEWER, Role.LEAD)
STAFF_ROLES = (Role.REVIEWER, Role.LEAD)

# An htmx request of a signed-out person (its answer is shown on the page as it is: text, not a login page).
SIGNED_OUT = (
    "You are signed out (your session ended, or you signed out in another tab). Sign in again in a new tab, "
    "then come back here: what you typed is still on this page, and nothing was saved."
)

# The blind rule per person (docs/labeling.md, "Blind rule"): only annotators give labels. Reviewers and
# leads can read judge verdicts, drilldowns and other people's labels, so a label of theirs is not blind.
LABELING_REFUSED = (
    "Only annotators label: reviewers and leads can read judge verdicts and other people's labels, "
    "so a label of theirs would not be blind (docs/labeling.md, Blind rule). Nothing was saved."
)


class HtmxHttpRequest(HttpRequest):
    """Every request of ours: django-htmx's middleware (config/settings.py) sets `htmx` on each one.

    The type django-htmx's docs suggest, so mypy knows `request.htmx` where a view reads it.
    """

    htmx: HtmxDetails


class AuthenticatedHttpRequest(HtmxHttpRequest):
    """The request a view behind `role_required` (or `labeler_required`) receives: its user signed in.

    Django types `request.user` as `User | AnonymousUser`; the decorator has refused the anonymous one, so
    here it is a `User`, and mypy catches a view that passes `request.user` on without such a guard.
    """

    user: User
    workspace: Workspace  # the workspace the request works in (evals/current_workspace.py); set behind role_required


# A signed-in person with no workspace: every page behind role_required answers this.
NO_WORKSPACE = (
    "You are not a member of any workspace yet: ask a lead of your team to add you on their workspace's "
    "Members page (or your identity provider's administrator to put you in a group that maps to one)."
)


def plain(message: str, status: int) -> HttpResponse:
    """A refusal as one sentence of text: what an htmx request's page shows where the person was working."""
    return HttpResponse(message, status=status, content_type="text/plain; charset=utf-8")


def checked_query(query: QueryDict) -> QueryDict:
    """The query parameters of a page, refused (BadRequest: a 400 that says why) when one holds a NUL character.

    A query string is decoded with replacement characters, so NUL (%00) is the one character that gets through
    and that PostgreSQL cannot compare: a filter by it was a 500. No name holds one, so nothing would match.
    """
    for name, values in query.lists():
        if "\x00" in name or any("\x00" in value for value in values):
            shown = name.replace("\x00", "%00")
            raise BadRequest(
                f"The address has a NUL character (%00) in its {shown!r} parameter, which no name can hold: "
                "remove it from the address."
            )
    return query


def gives_blind_labels(user: User | AnonymousUser, workspace: Workspace | int | None) -> bool:
    """True for an active annotator of `workspace` (a superuser counts as a lead, so never)."""
    return has_role(user, workspace, Role.ANNOTATOR)


def has_role(user: User | AnonymousUser, workspace: Workspace | int | None, *roles: str) -> bool:
    """True when `user` holds one of `roles` in `workspace` (a superuser counts as a lead in every one)."""
    if not user.is_authenticated or not isinstance(user, User):
        return False
    return user.role_in(workspace) in roles


def role_required(*roles: str, refused: str = "") -> Callable:
    """Login required, then 403 unless the user holds one of `roles` (`refused`: the message, if not the default)."""

    def decorator(view: Callable[..., HttpResponse]) -> Callable[..., HttpResponse]:
        @login_required
        @wraps(view)
        def checked(request: HttpRequest, *args, **kwargs) -> HttpResponse:
            workspace = getattr(request, "workspace", None)
            if workspace is None:
                raise PermissionDenied(NO_WORKSPACE)
            if not has_role(request.user, workspace, *roles):
                raise PermissionDenied(refused or f"This page is for {' or '.join(f'{role}s' for role in roles)}.")
            return view(request, *args, **kwargs)

        @wraps(view)
        def wrapped(request: HttpRequest, *args, **kwargs) -> HttpResponse:
            # An htmx request follows the redirect to the login page by itself and would put that page inside
            # the form it came from; it is told in words instead, and what the person typed stays.
            if not request.user.is_authenticated and request.headers.get("HX-Request") == "true":
                return plain(SIGNED_OUT, 403)
            return checked(request, *args, **kwargs)

        wrapped.allowed_roles = roles  # type: ignore[attr-defined]
        return wrapped

    return decorator


# Next, the labeling page, save and submit: annotators only (a 403 with LABELING_REFUSED for anyone else).
labeler_required = role_required(Role.ANNOTATOR, refused=LABELING_REFUSED)
