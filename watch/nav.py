"""The watch's menu entry: reviewers and leads (menus only hide; the views check roles themselves)."""

from __future__ import annotations

from django.urls import reverse

from evals.access import STAFF_ROLES, has_role


def nav_items(user, workspace) -> list[dict]:
    # Annotators label the audit stream blind: a watch shows gold and the judge's verdicts, so no entry (and 403).
    if not has_role(user, workspace, *STAFF_ROLES):
        return []
    return [{"label": "Watches", "url": reverse("watch:list")}]
