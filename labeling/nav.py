"""Menu entries of this app for a user (menus only hide; views check roles themselves)."""

from __future__ import annotations


def nav_items(user) -> list[dict]:
    # Each item: {"label": str, "url": str}. Use labeling.access.has_role to filter.
    return []
