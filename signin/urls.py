from django.urls import path

from .views import CallbackView, StartView

urlpatterns = [
    path("start/", StartView.as_view(), name="oidc_start"),
    path("callback/", CallbackView.as_view(), name="oidc_callback"),
]
