from __future__ import annotations

from django.urls import path

from . import views

app_name = "formats"
urlpatterns = [
    path("import/", views.upload, name="upload"),
    path("import/jobs/<int:pk>/", views.import_job, name="import_job"),
]
