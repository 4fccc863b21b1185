"""The header's workspace switcher: choose the workspace to work in (evals/current_workspace.py keeps it)."""

from __future__ import annotations

from django.http import Http404, HttpResponse
from django.shortcuts import redirect
from django.views.decorators.http import require_POST

from evals.access import ALL_ROLES, AuthenticatedHttpRequest, role_required
from evals.current_workspace import SESSION_KEY


@require_POST
@role_required(*ALL_ROLES)
def switch_workspace(request: AuthenticatedHttpRequest) -> HttpResponse:
    """Work in the workspace the form names (one of the person's, else 404), starting from its Home: a page
    of the workspace left behind would be a missing page in the new one."""
    slug = request.POST.get("workspace", "")
    if slug not in {workspace.slug for workspace in request.workspaces}:  # type: ignore[attr-defined]
        raise Http404("No such workspace.")
    request.session[SESSION_KEY] = slug
    return redirect("home")
