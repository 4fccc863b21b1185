"""Navigation built per role: each app's nav.py says which of its pages a user may open."""

from __future__ import annotations

from django.http import HttpRequest

from alerts import nav as alerts_nav
from calibration import nav as calibration_nav
from evals.models import Role
from judging import nav as judging_nav
from labeling import nav as labeling_nav
from overview import nav as overview_nav
from watch import nav as watch_nav


def workspace(request: HttpRequest) -> dict:
    """The header's workspace, the person's role in it, and the workspaces the switcher offers."""
    current = getattr(request, "workspace", None)
    user = getattr(request, "user", None)
    if current is None or user is None or not user.is_authenticated:
        return {}
    role = user.role_in(current)
    return {
        "current_workspace": current,
        "workspace_role": role,
        "workspace_role_label": Role(role).label if role else "",
        "my_workspaces": getattr(request, "workspaces", []),
    }


def navigation(request: HttpRequest) -> dict:
    user = getattr(request, "user", None)
    if user is None or not user.is_authenticated:
        return {"nav_items": []}
    items = []
    for module in (labeling_nav, judging_nav, calibration_nav, watch_nav, alerts_nav, overview_nav):
        items.extend(module.nav_items(user, getattr(request, "workspace", None)))
    return {"nav_items": items}
