from __future__ import annotations

from django.urls import path

from . import browse_views, progress_views

app_name = "workspace"

# Served under calibration/ (config/urls.py), where these pages have always been.
urlpatterns = [
    path("progress/", progress_views.progress_page, name="progress"),
    path("sets/<int:eval_set>/", browse_views.eval_set_page, name="eval_set"),
    path("outputs/<int:output>/", browse_views.output_page, name="output"),
]
