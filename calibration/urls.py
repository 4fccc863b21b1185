from __future__ import annotations

from django.urls import path

from . import annotator_views, audit_views, decision_views, views, workbench_views

app_name = "calibration"
REPORT = "report/<int:eval_set>/<int:rubric_version>/<int:judge>/"

urlpatterns = [
    path("", views.index, name="index"),
    path(REPORT, views.report_page, name="report"),
    path(REPORT + "export.<str:fmt>", views.report_export, name="export"),
    path(REPORT + "gating", views.mark_gating_view, name="mark_gating"),
    path(REPORT + "review", views.review_gating_view, name="review_gating"),
    path(REPORT + "<slug:key>/<slug:cell>/", views.drilldown, name="drilldown"),
    path(REPORT + "<slug:key>/<slug:cell>/dispute", decision_views.dispute_gold, name="dispute_gold"),
    path(
        "annotators/<int:eval_set>/<int:rubric_version>/",
        annotator_views.annotator_agreement_page,
        name="annotator_agreement",
    ),
    path("compare/", views.compare, name="compare"),
    path("workbench/compare/", workbench_views.version_compare, name="version_compare"),
    path(
        "workbench/<int:judge>/<int:eval_set>/<int:rubric_version>/",
        workbench_views.workbench_version,
        name="workbench_version",
    ),
    path(
        "workbench/<int:judge>/<int:eval_set>/<int:rubric_version>/run/<slug:part>",
        workbench_views.workbench_run,
        name="workbench_run",
    ),
    path(
        "workbench/<int:judge>/<int:eval_set>/<int:rubric_version>/edit/<slug:key>/",
        workbench_views.guidance_edit,
        name="guidance_edit",
    ),
    path("workbench/compare/held-out", workbench_views.version_compare_held_out, name="version_compare_held_out"),
    path("rubric/<int:rubric_version>/approve", views.approve_rubric, name="approve_rubric"),
    path("gating/<int:mark>/revoke", views.revoke_gating_view, name="revoke_gating"),
    path("gates/run", decision_views.gate_run, name="gate_run"),
    path("gates/<int:result>/", decision_views.gate_result, name="gate_result"),
    path("audits/", audit_views.audit_plans, name="audit_plans"),
    path("audits/start", audit_views.audit_plan_start, name="audit_plan_start"),
    path("audits/<int:plan>/", audit_views.audit_plan, name="audit_plan"),
    path("audits/<int:plan>/figures", audit_views.audit_plan_figures, name="audit_plan_figures"),
    path("audits/<int:plan>/release", audit_views.audit_plan_release, name="audit_plan_release"),
    path("audits/<int:plan>/close", audit_views.audit_plan_close, name="audit_plan_close"),
]
