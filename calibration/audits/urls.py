from __future__ import annotations

from django.urls import path

from calibration.audits import group_views, views

urlpatterns = [
    path("", views.audit_plans, name="audit_plans"),
    path("start", views.audit_plan_start, name="audit_plan_start"),
    path("<int:plan>/", views.audit_plan, name="audit_plan"),
    path("<int:plan>/figures", views.audit_plan_figures, name="audit_plan_figures"),
    path("<int:plan>/release", views.audit_plan_release, name="audit_plan_release"),
    path("<int:plan>/close", views.audit_plan_close, name="audit_plan_close"),
    path("groups/start", group_views.audit_group_start, name="audit_group_start"),
    path("groups/<int:group>/", group_views.audit_group, name="audit_group"),
    path("groups/<int:group>/figures", group_views.audit_group_figures, name="audit_group_figures"),
    path("groups/<int:group>/release", group_views.audit_group_release, name="audit_group_release"),
    path("groups/<int:group>/close", group_views.audit_group_close, name="audit_group_close"),
]
