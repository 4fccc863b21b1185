"""Addresses that moved to the room whose name they now carry, answered with a permanent redirect so that bookmarks
and the links in people's notes keep working.

The query string is kept. GET and HEAD get a 301; any other method a 308, which keeps the method and the body: a
form rendered before the move (its CSRF token still good) posts to the new address instead of turning into a GET
that the new address refuses.
"""

from __future__ import annotations

from django.http import HttpRequest, HttpResponsePermanentRedirect
from django.urls import URLPattern, path, reverse


def moved(old: str, name: str) -> URLPattern:
    """A pattern for the old address `old` (its converters as the new one's) that redirects to URL name `name`."""

    def redirect(request: HttpRequest, **kwargs) -> HttpResponsePermanentRedirect:
        target = reverse(name, kwargs=kwargs)
        if query := request.META.get("QUERY_STRING", ""):
            target = f"{target}?{query}"
        return HttpResponsePermanentRedirect(target, preserve_request=request.method not in ("GET", "HEAD"))

    return path(old, redirect)
