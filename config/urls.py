from __future__ import annotations

from django.contrib import admin
from django.contrib.auth import views as auth_views
from django.urls import include, path

from api.urls import calibration_patterns as calibration_api
from calibration import urls as calibration_urls
from workspace.home import home

from .login import LoginView

handler400 = "config.errors.bad_request"
handler403 = "config.errors.permission_denied"
handler404 = "config.errors.page_not_found"
# handler500 stays Django's default: it renders templates/500.html with no context, which cannot fail again.

urlpatterns = [
    path("admin/", admin.site.urls),
    path("accounts/login/", LoginView.as_view(), name="login"),
    path("accounts/logout/", auth_views.LogoutView.as_view(), name="logout"),
    path("judging/", include("judging.urls")),
    # calibration's pages, and the gate's first address (/calibration/api/gate), which the API serves.
    path("calibration/", include((calibration_urls.urlpatterns + calibration_api, "calibration"))),
    path("calibration/", include("workspace.urls")),
    path("api/", include("api.urls")),
    path("", home, name="home"),
    path("", include("formats.urls")),
    path("", include("labeling.urls")),
]
