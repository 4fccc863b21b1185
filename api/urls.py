"""/api/: the JSON API (api/ninja_api.py, its operations in api/endpoints/), with its browsable docs at /api/docs
and schema at /api/openapi.json; and the gate's first address, /calibration/api/gate, the same operation as /api/gate.

Tokens are made on the gate page (calibration:gates, /api/gates/), where a lead gives each its scopes. Every answer
under /api/ is JSON (the gate page aside), an address that does not exist and a method an endpoint does not take
included.
"""

from __future__ import annotations

from functools import wraps

from django.http import Http404, HttpRequest, HttpResponse
from django.urls import URLPattern, include, path, re_path
from django.views.decorators.csrf import csrf_exempt

from . import otlp, views
from .answers import error
from .ninja_api import NOT_FOUND, api


def _json_refusals(view):
    """ninja answers a method an endpoint does not take with a bare 405, and its root (/api/) with Http404, which
    Django would answer with its HTML page: the same statuses, as JSON (Allow kept)."""

    @wraps(view)
    def answered(request: HttpRequest, *args, **kwargs) -> HttpResponse:
        try:
            response = view(request, *args, **kwargs)
        except Http404:  # ninja's root view raises it
            return error(404, NOT_FOUND)
        if response.status_code not in (404, 405) or response.get("Content-Type", "").startswith("application/json"):
            return response
        if response.status_code == 404:
            return error(404, NOT_FOUND)
        allowed = response["Allow"]
        refused = error(405, f"{request.method} is not allowed here; use {allowed}")
        refused["Allow"] = allowed
        return refused

    return answered


@csrf_exempt  # a POST to a wrong address is told so, like a GET, not refused for a CSRF token the API never uses
def not_found(request: HttpRequest, rest: str = "") -> HttpResponse:
    return error(404, NOT_FOUND)


# Not named app_name: include("api.urls") would take a module's app_name as this URLconf's own namespace.
_patterns, _ninja_app, _namespace = api.urls
_patterns = [
    URLPattern(p.pattern, _json_refusals(p.callback), p.default_args, p.name) if isinstance(p, URLPattern) else p
    for p in _patterns
]
urlpatterns = [
    # OTLP/HTTP (api/otlp.py): protobuf or OTLP/JSON bodies and the OTLP answers, so a plain view beside ninja's.
    path("otlp/v1/traces", otlp.receive_traces, name="otlp_traces"),
    path("", include((_patterns, _ninja_app), namespace=_namespace)),
    re_path(r"^(?P<rest>.*)$", not_found),
]
# The gate page with its token panel (api/views.py), under /api/ in the calibration namespace (config/urls.py), whose
# names the templates use; config/urls.py puts them before /api/'s own patterns, whose last answers every other
# address with a JSON 404. Their first addresses were under /calibration/ and redirect here.
token_panel_patterns = [
    path("gates/", views.gates, name="gates"),
    path("gates/tokens", views.create_token, name="create_token"),
    path("gates/tokens/<int:token>/revoke", views.revoke_token, name="revoke_token"),
]
# In the calibration namespace, under /calibration/ (config/urls.py): the gate's first address (docs/api.md), the
# operation of /api/gate itself, so one token check, one body Schema and one answer for both.
calibration_patterns = [
    path(
        "api/gate",
        next(p.callback for p in _patterns if isinstance(p, URLPattern) and p.name == "gate"),
        name="api_gate",
    ),
]
