from __future__ import annotations

from django.urls import path

from . import views

app_name = "alerts"

urlpatterns = [
    path("", views.alerts_page, name="page"),
    path("log", views.delivery_log, name="log"),
    path("destinations/add", views.add_destination, name="add"),
    path("destinations/<int:pk>/edit", views.edit_destination, name="edit"),
    path("destinations/<int:pk>/enabled", views.enable_destination, name="enable"),
    path("destinations/<int:pk>/remove", views.remove_destination, name="remove"),
    path("destinations/<int:pk>/test", views.test_destination, name="test"),
]
