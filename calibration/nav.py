"""Where calibration's pages send people: the menu entries of this app for a user (menus only hide; views check
roles themselves) and the safe `next` address after a posted form."""

from __future__ import annotations

from django.http import HttpRequest
from django.urls import reverse
from django.utils.http import url_has_allowed_host_and_scheme

from evals.access import STAFF_ROLES, has_role


def nav_items(user, workspace) -> list[dict]:
    # Annotators label blind: calibration shows gold and verdicts, so they get no entry (and 403).
    if not has_role(user, workspace, *STAFF_ROLES):
        return []
    return [
        {"label": "Progress", "url": reverse("overview:progress")},
        {"label": "Calibration", "url": reverse("calibration:index")},
        {"label": "Gate results", "url": reverse("calibration:gates")},
        {"label": "Audits", "url": reverse("calibration:audit_plans")},
    ]


def safe_next(request: HttpRequest, default: str) -> str:
    """The posted `next` address when it stays on this site, else the default (no open redirect)."""
    target = request.POST.get("next", "")
    ok = url_has_allowed_host_and_scheme(target, allowed_hosts={request.get_host()}, require_https=request.is_secure())
    return target if ok else default
