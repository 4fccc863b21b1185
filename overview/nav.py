"""Menu entries of this app for a user (menus only hide; views check roles themselves)."""

from __future__ import annotations

from django.urls import reverse

from evals.access import has_role
from evals.models import Role


def nav_items(user, workspace) -> list[dict]:
    if not has_role(user, workspace, Role.LEAD):
        return []
    return [{"label": "Members", "url": reverse("overview:members")}]
