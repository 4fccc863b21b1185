from __future__ import annotations

from django.urls import path

from calibration.workbench import views

VERSION = "<int:judge>/<int:eval_set>/<int:rubric_version>/"

urlpatterns = [
    path("compare/", views.version_compare, name="version_compare"),
    path("compare/held-out", views.version_compare_held_out, name="version_compare_held_out"),
    path(VERSION, views.workbench_version, name="workbench_version"),
    path(VERSION + "run/<slug:part>", views.workbench_run, name="workbench_run"),
    path(VERSION + "edit/<slug:key>/", views.guidance_edit, name="guidance_edit"),
]
