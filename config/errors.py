"""Error answers: the site's own pages, and refusals an htmx request can show.

htmx does not swap an error answer into the page, and a whole HTML error page inside a labeling
form would be worse. So a refused htmx request gets its reason as `text/plain`, and the page's
script (static/js/icewater.js, and labeling.js on the labeling page) puts that sentence where the
person was working. Every other request gets the site's 403/404/500 page (templates/), through
Django's own default views.

Expected refusals are not errors: config/log_filters.py logs a 4xx as one line, without the traceback
Django attaches to a PermissionDenied; a 500 keeps its traceback (config/settings.py LOGGING).
"""

from __future__ import annotations

from django.core.exceptions import BadRequest
from django.http import Http404, HttpRequest, HttpResponse
from django.shortcuts import render
from django.views import csrf, defaults

from evals.access import plain

CSRF_REFUSED = (
    "This page's security token is no longer valid (you signed in again or cookies were cleared since it "
    "was loaded). Nothing was saved: copy what you typed, then reload the page."
)


def is_htmx(request: HttpRequest) -> bool:
    # request.htmx is set by django-htmx's middleware; a view for a failure found before it ran reads the header.
    return bool(getattr(request, "htmx", False)) or request.headers.get("HX-Request") == "true"


def bad_request(request: HttpRequest, exception: Exception) -> HttpResponse:
    """handler400: a BadRequest's message (e.g. evals.access.checked_query's) on the page, or as text for htmx.

    Django's own 400 page says nothing about what was wrong; ours says what to change. Other 400s (a suspicious
    request: a host not allowed, a body too large) keep Django's page, which tells an outsider nothing.
    """
    if not isinstance(exception, BadRequest):
        return defaults.bad_request(request, exception)
    message = str(exception) or "The request could not be read; nothing was saved."
    if is_htmx(request):
        return plain(message, 400)
    return render(request, "400.html", {"exception": message}, status=400)


def permission_denied(request: HttpRequest, exception: Exception) -> HttpResponse:
    """handler403: the PermissionDenied's message (each role check words one) for htmx, else 403.html."""
    if is_htmx(request):
        return plain(str(exception) or "Your role cannot do this; nothing was saved.", 403)
    return defaults.permission_denied(request, exception)


def csrf_failure(request: HttpRequest, reason: str = "") -> HttpResponse:
    """CSRF_FAILURE_VIEW: Django's page, or for htmx what to do about it (Django's check itself is unchanged)."""
    if is_htmx(request):
        return plain(CSRF_REFUSED, 403)
    return csrf.csrf_failure(request, reason)


NOT_FOUND = "There is nothing at this address, or it is not yours to see."


def page_not_found(request: HttpRequest, exception: Exception) -> HttpResponse:
    """handler404: the site's 404.html (or one plain sentence for htmx)."""
    if is_htmx(request):
        return plain(NOT_FOUND, 404)
    return defaults.page_not_found(request, exception)


class NotFoundPage:
    """A view's Http404 (a wrong id) answered with the site's 404 page, with debug on too.

    With ICEWATER_DEBUG=1 Django answers every Http404 with its yellow technical page; a developer
    following a stale link should still see the site's page. Only a view's Http404 comes here: an
    address that matches no URL pattern still gets the technical page (listing the patterns) while
    debugging; with debug off (the default, `make run` included) both get 404.html. Responses a view
    builds with status 404 are untouched.
    """

    def __init__(self, get_response):
        self.get_response = get_response

    def __call__(self, request: HttpRequest) -> HttpResponse:
        return self.get_response(request)

    def process_exception(self, request: HttpRequest, exception: Exception) -> HttpResponse | None:
        if isinstance(exception, Http404):
            return page_not_found(request, exception)
        return None
