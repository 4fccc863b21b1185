from __future__ import annotations

from django.urls import path

from . import audit_log_views, browse_views, members_views, progress_views, workspace_switch

app_name = "overview"

# At the site's root (config/urls.py); their first addresses under /calibration/ redirect here
# (config/moved_addresses.py).
urlpatterns = [
    path("progress/", progress_views.progress_page, name="progress"),
    path("sets/<int:eval_set>/", browse_views.eval_set_page, name="eval_set"),
    path("outputs/<int:output>/", browse_views.output_page, name="output"),
    path("workspaces/switch/", workspace_switch.switch_workspace, name="switch_workspace"),
    path("members/", members_views.members_page, name="members"),
    path("members/add", members_views.add_member, name="add_member"),
    path("members/create", members_views.create_member, name="create_member"),
    path("members/<int:membership>/role", members_views.change_role, name="change_member_role"),
    path("members/<int:membership>/remove", members_views.remove_member, name="remove_member"),
    path("members/log/", audit_log_views.audit_log_page, name="audit_log"),
    path("members/log/export", audit_log_views.audit_log_export, name="audit_log_export"),
]
