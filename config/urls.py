from __future__ import annotations

from django.contrib import admin
from django.urls import include, path

from api.urls import calibration_patterns as calibration_api
from api.urls import token_panel_patterns
from calibration import urls as calibration_urls
from overview.home import home
from signin.views import LogoutView

from .login import LoginView, admin_login
from .moved_addresses import moved
from .password_change import PasswordChangeView

handler400 = "config.errors.bad_request"
handler403 = "config.errors.permission_denied"
handler404 = "config.errors.page_not_found"
# handler500 stays Django's default: it renders templates/500.html with no context, which cannot fail again.

urlpatterns = [
    path("admin/login/", admin_login),  # before the admin's own: it follows ICEWATER_PASSWORD_LOGIN
    path("admin/", admin.site.urls),
    path("accounts/login/", LoginView.as_view(), name="login"),
    path("accounts/logout/", LogoutView.as_view(), name="logout"),
    path("oidc/", include("signin.urls")),  # sign-in with OpenID Connect: 404 while no provider is set
    path("accounts/password/", PasswordChangeView.as_view(), name="password_change"),
    path("judging/", include("judging.urls")),
    path("watches/", include("watch.urls")),
    path("alerts/", include("alerts.urls")),
    # The calibration namespace: calibration's pages and the gate's first address (/calibration/api/gate), which the
    # API serves; and the gate page with its token panel, which the API's room serves under /api/, before /api/'s
    # own patterns (the last of which answers any other address there with a JSON 404).
    path(
        "",
        include(
            (
                [
                    path("calibration/", include([*calibration_urls.urlpatterns, *calibration_api])),
                    path("api/", include(token_panel_patterns)),
                ],
                "calibration",
            )
        ),
    ),
    # Pages that moved to the room their address names: their first addresses redirect (301, 308 for a POST).
    moved("calibration/progress/", "overview:progress"),
    moved("calibration/sets/<int:eval_set>/", "overview:eval_set"),
    moved("calibration/outputs/<int:output>/", "overview:output"),
    moved("calibration/gates/", "calibration:gates"),
    moved("calibration/gates/tokens", "calibration:create_token"),
    moved("calibration/gates/tokens/<int:token>/revoke", "calibration:revoke_token"),
    path("api/", include("api.urls")),
    path("", home, name="home"),
    path("", include("overview.urls")),
    path("", include("formats.urls")),
    path("", include("labeling.urls")),
]
