from __future__ import annotations

from django.urls import path

from calibration.report import views

REPORT = "report/<int:eval_set>/<int:rubric_version>/<int:judge>/"

urlpatterns = [
    path("", views.index, name="index"),
    path(REPORT, views.report_page, name="report"),
    path(REPORT + "export.<str:fmt>", views.report_export, name="export"),
    path(REPORT + "<slug:key>/<slug:cell>/", views.drilldown, name="drilldown"),
    path(REPORT + "<slug:key>/<slug:cell>/dispute", views.dispute_gold, name="dispute_gold"),
    path(
        "annotators/<int:eval_set>/<int:rubric_version>/",
        views.annotator_agreement_page,
        name="annotator_agreement",
    ),
    path("compare/", views.compare, name="compare"),
]
