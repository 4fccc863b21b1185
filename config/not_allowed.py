"""A GET on an address that only takes a form's POST: a page that says so, instead of Django's blank 405.

Someone who reloads, bookmarks or follows a link to a form's target (`/queues/3/next`, `/import/...`)
got an empty page. require_POST and require_http_methods answer with an empty HttpResponseNotAllowed;
this middleware puts a page in its place, keeping the 405 status and its Allow header. The JSON API
answers for itself (config/api_paths.py), and other methods than GET are left as they are.
"""

from __future__ import annotations

from collections.abc import Callable

from django.http import HttpRequest, HttpResponse
from django.shortcuts import render

from .api_paths import is_json_api


def method_not_allowed_page(get_response: Callable[[HttpRequest], HttpResponse]):
    def middleware(request: HttpRequest) -> HttpResponse:
        response = get_response(request)
        if response.status_code != 405 or response.content or request.method not in ("GET", "HEAD"):
            return response
        if is_json_api(request.path):
            return response
        page = render(request, "405.html", status=405)
        page["Allow"] = response.get("Allow", "POST")
        return page

    return middleware
