"""Navigation built per role: each app's nav.py says which of its pages a user may open."""

from __future__ import annotations

from django.http import HttpRequest

from calibration import nav as calibration_nav
from judging import nav as judging_nav
from labeling import nav as labeling_nav


def navigation(request: HttpRequest) -> dict:
    user = getattr(request, "user", None)
    if user is None or not user.is_authenticated:
        return {"nav_items": []}
    items = []
    for module in (labeling_nav, judging_nav, calibration_nav):
        items.extend(module.nav_items(user))
    return {"nav_items": items}
