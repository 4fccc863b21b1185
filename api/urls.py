"""/api/: the JSON API (api/endpoints.py, with /api/docs and /api/openapi.json) and the lead's token page."""

from __future__ import annotations

from django.urls import include, path

from . import views
from .endpoints import api

token_urls = (
    [
        path("", views.tokens, name="tokens"),
        path("new", views.create_token, name="create"),
        path("<int:token>/revoke", views.revoke_token, name="revoke"),
    ],
    "api_tokens",
)

urlpatterns = [
    path("tokens/", include(token_urls)),
    path("", api.urls),
]
