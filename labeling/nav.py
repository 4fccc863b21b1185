"""Menu entries of this app for a user (menus only hide; views check roles themselves)."""

from __future__ import annotations

from django.urls import reverse

from evals.access import STAFF_ROLES, gives_blind_labels, has_role
from evals.models import Role


def nav_items(user, workspace) -> list[dict]:
    items = []
    if gives_blind_labels(user, workspace):  # labeling is for annotators only (the blind rule)
        items.append({"label": "My work", "url": reverse("labeling:my_work")})
    if has_role(user, workspace, *STAFF_ROLES):
        items.append({"label": "Adjudicate", "url": reverse("labeling:adjudication_queue")})
    if has_role(user, workspace, Role.LEAD):
        items.append({"label": "Queues", "url": reverse("labeling:queues")})
        items.append({"label": "Import", "url": reverse("formats:upload")})
    return items
