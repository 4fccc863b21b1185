from __future__ import annotations

from django.urls import path

from calibration.audits import views

urlpatterns = [
    path("", views.audit_plans, name="audit_plans"),
    path("start", views.audit_plan_start, name="audit_plan_start"),
    path("<int:plan>/", views.audit_plan, name="audit_plan"),
    path("<int:plan>/figures", views.audit_plan_figures, name="audit_plan_figures"),
    path("<int:plan>/release", views.audit_plan_release, name="audit_plan_release"),
    path("<int:plan>/close", views.audit_plan_close, name="audit_plan_close"),
]
