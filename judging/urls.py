from __future__ import annotations

from django.urls import path

from . import probe_views, views

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
    path("probes/", probe_views.index, name="probes"),
    path("probes/start", probe_views.start, name="start_probe_run"),
    path("probes/<int:probe_run_id>/", probe_views.detail, name="probe_run"),
    path("probes/<int:probe_run_id>/status", probe_views.status, name="probe_status"),
    path("probes/<int:probe_run_id>/cancel", probe_views.cancel, name="probe_cancel"),
    path("probes/<int:probe_run_id>/<slug:probe>/<slug:key>/", probe_views.examples, name="probe_examples"),
]
