from __future__ import annotations

from django.urls import path

from . import views

app_name = "watch"

urlpatterns = [
    path("", views.watch_list, name="list"),
    path("start", views.watch_start, name="start"),
    path("<int:watch_id>/", views.watch_detail, name="detail"),
    path("<int:watch_id>/stop", views.watch_stop, name="stop"),
]
