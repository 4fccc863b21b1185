"""The identity provider's origin, for the Content-Security-Policy. Pure: config/settings.py reads it.

Logging out is a form posted to Icewater that redirects to the provider's end_session_endpoint, and browsers
hold a form's redirects to the page's form-action directive: without the provider's origin there, Chromium
stops the logout at Icewater's end and the provider's session stays.
"""

from __future__ import annotations

from urllib.parse import urlsplit


def issuer_origin(issuer: str) -> str:
    parts = urlsplit(issuer)
    return f"{parts.scheme}://{parts.netloc}"
