"""Role checks, enforced on the server for every view and endpoint.

Menus hide what a role cannot use, but only these checks decide. A view that
any signed-in user may open still says so explicitly with `role_required(*ALL_ROLES)`.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import wraps

from django.contrib.auth.decorators import login_required
from django.core.exceptions import PermissionDenied
from django.http import HttpRequest, HttpResponse

from .models import Role

ALL_ROLES = (Role.ANNOTATOR, Role.REVIEWER, Role.LEAD)
STAFF_ROLES = (Role.REVIEWER, Role.LEAD)


def has_role(user, *roles: str) -> bool:
    if not user.is_authenticated or not user.is_active:
        return False
    # A superuser administers the site; for the product it counts as a lead.
    role = Role.LEAD if user.is_superuser else user.role
    return role in roles


def role_required(*roles: str) -> Callable:
    """Login required, then 403 unless the user holds one of `roles`."""

    def decorator(view: Callable[..., HttpResponse]) -> Callable[..., HttpResponse]:
        @login_required
        @wraps(view)
        def wrapped(request: HttpRequest, *args, **kwargs) -> HttpResponse:
            if not has_role(request.user, *roles):
                raise PermissionDenied(f"This page is for {' or '.join(roles)}s.")
            return view(request, *args, **kwargs)

        wrapped.allowed_roles = roles  # type: ignore[attr-defined]
        return wrapped

    return decorator
