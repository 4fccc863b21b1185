"""Menu entries of this app for a user (menus only hide; views check roles themselves)."""

from __future__ import annotations

from django.urls import reverse

from evals.access import STAFF_ROLES, has_role


def nav_items(user) -> list[dict]:
    # Annotators label blind: calibration shows gold and verdicts, so they get no entry (and 403).
    if not has_role(user, *STAFF_ROLES):
        return []
    return [
        {"label": "Progress", "url": reverse("workspace:progress")},
        {"label": "Calibration", "url": reverse("calibration:index")},
        {"label": "Gate results", "url": reverse("calibration:gates")},
        {"label": "Audits", "url": reverse("calibration:audit_plans")},
    ]
