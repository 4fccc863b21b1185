"""Which addresses belong to the JSON API (token auth, JSON answers): those under /api/ and the gate's first address
under /calibration/api/, except the gate page with its token panel, HTML pages of the api room at /api/gates/
(api/urls.py token_panel_patterns), which a browser with a session uses like every other page."""

from __future__ import annotations

JSON_API_PREFIXES = ("/api/", "/calibration/api/")
PAGE_PREFIXES = ("/api/gates/",)


def is_json_api(path: str) -> bool:
    return path.startswith(JSON_API_PREFIXES) and not path.startswith(PAGE_PREFIXES)
