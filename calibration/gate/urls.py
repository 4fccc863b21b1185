from __future__ import annotations

from django.urls import path

from calibration.gate import views
from calibration.report.urls import REPORT

urlpatterns = [
    path(REPORT + "gating", views.mark_gating_view, name="mark_gating"),
    path(REPORT + "review", views.review_gating_view, name="review_gating"),
    path("rubric/<int:rubric_version>/approve", views.approve_rubric, name="approve_rubric"),
    path("gating/<int:mark>/revoke", views.revoke_gating_view, name="revoke_gating"),
    path("gates/run", views.gate_run, name="gate_run"),
    path("gates/<int:result>/", views.gate_result, name="gate_result"),
]
