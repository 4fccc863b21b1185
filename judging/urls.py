from __future__ import annotations

from django.urls import path

from . import views

app_name = "judging"
urlpatterns = [
    path("", views.index, name="index"),
    path("runs/start", views.start_run, name="start_run"),
    path("runs/<int:run_id>/", views.run_detail, name="run"),
    path("runs/<int:run_id>/progress", views.run_progress, name="run_progress"),
    path("runs/<int:run_id>/cancel", views.run_cancel, name="run_cancel"),
    path("runs/<int:run_id>/verdicts", views.run_verdicts, name="run_verdicts"),
    path("verdicts/<int:verdict_id>/", views.verdict_detail, name="verdict"),
    path("configs/new", views.config_new, name="config_new"),
    path("configs/<int:config_id>/", views.config_detail, name="config"),
]
