"""The workspace a request works in: the session carries it, an address may name it.

- A signed-in person works in one workspace at a time, kept in their session (`SESSION_KEY`) and chosen
  with the switcher in the header (overview/workspace_switch.py).
- Any address may carry `?workspace=SLUG`: for a member of that workspace it becomes the one they work in
  before the page is read, so a link that names its workspace opens the same page for every colleague who
  may see it (the header's "Copy link" adds it). For anyone else the address answers 404, as an unknown
  one does: a workspace's slug tells an outsider nothing.
- With no choice in the session (or a choice that is no longer theirs), the first of their workspaces by
  name. A person with none gets `request.workspace = None`, and every page behind role_required says so.

API calls carry no session: a token belongs to one workspace and that is the request's (api/auth.py).
"""

from __future__ import annotations

from collections.abc import Callable

from django.http import Http404, HttpRequest, HttpResponse

from evals.models import Membership, User, Workspace

SESSION_KEY = "icewater_workspace"
QUERY_PARAMETER = "workspace"


def workspaces_of(user: User) -> list[Workspace]:
    """The workspaces `user` may work in, by name: all of them for a superuser (the site's administrator)."""
    if not user.is_active:
        return []
    if user.is_superuser:
        return list(Workspace.objects.all())
    memberships = list(Membership.objects.filter(user=user).select_related("workspace").order_by("workspace"))
    user.remember_workspace_roles({m.workspace_id: m.role for m in memberships})  # one query for both
    return [m.workspace for m in memberships]


def choose(request: HttpRequest, mine: list[Workspace]) -> Workspace | None:
    by_slug = {workspace.slug: workspace for workspace in mine}
    asked = request.GET.get(QUERY_PARAMETER)
    if asked is not None:
        if asked not in by_slug:
            raise Http404("No such page.")
        request.session[SESSION_KEY] = asked
        return by_slug[asked]
    kept = by_slug.get(request.session.get(SESSION_KEY, ""))
    if kept is not None:
        return kept
    if not mine:
        return None
    request.session[SESSION_KEY] = mine[0].slug
    return mine[0]


def current_workspace(get_response: Callable[[HttpRequest], HttpResponse]) -> Callable[[HttpRequest], HttpResponse]:
    """Middleware (after authentication): sets `request.workspace` and `request.workspaces` (the switcher's)."""

    def middleware(request: HttpRequest) -> HttpResponse:
        user = getattr(request, "user", None)
        request.workspace = None  # type: ignore[attr-defined]
        request.workspaces = []  # type: ignore[attr-defined]
        if isinstance(user, User) and user.is_authenticated:
            mine = workspaces_of(user)
            request.workspaces = mine  # type: ignore[attr-defined]
            request.workspace = choose(request, mine)  # type: ignore[attr-defined]
        return get_response(request)

    return middleware
