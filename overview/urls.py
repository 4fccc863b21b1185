from __future__ import annotations

from django.urls import path

from . import browse_views, progress_views, workspace_switch

app_name = "overview"

# At the site's root (config/urls.py); their first addresses under /calibration/ redirect here
# (config/moved_addresses.py).
urlpatterns = [
    path("progress/", progress_views.progress_page, name="progress"),
    path("sets/<int:eval_set>/", browse_views.eval_set_page, name="eval_set"),
    path("outputs/<int:output>/", browse_views.output_page, name="output"),
    path("workspaces/switch/", workspace_switch.switch_workspace, name="switch_workspace"),
]
