"""/api/: the JSON API (api/endpoints.py), with its browsable docs at /api/docs and schema at /api/openapi.json.

Tokens are made on the gate page (calibration:gates), where a lead gives each its scopes.
"""

from __future__ import annotations

from django.urls import path

from .endpoints import api

urlpatterns = [path("", api.urls)]
