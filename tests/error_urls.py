"""The site's URLs plus one view that fails, for the error-page tests (ROOT_URLCONF in
tests/config/test_error_pages.py)."""

from __future__ import annotations

from django.urls import path

from config.urls import handler403, handler404  # noqa: F401 - the handlers are read from the URLconf
from config.urls import urlpatterns as site


def boom(request):
    raise RuntimeError("an unexpected failure")


urlpatterns = [path("boom/", boom), *site]
