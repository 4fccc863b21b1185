"""Menu entries of this app for a user (menus only hide; views check roles themselves)."""

from __future__ import annotations

from django.urls import reverse

from evals.access import STAFF_ROLES, has_role


def nav_items(user, workspace) -> list[dict]:
    if has_role(user, workspace, *STAFF_ROLES):
        return [{"label": "Alerts", "url": reverse("alerts:page")}]
    return []
