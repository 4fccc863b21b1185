"""The Django admin group of the lead role: what a lead may see and change in the admin.

The role decides the product's pages (evals.access); the admin works with Django's own permissions, so
every lead is a member of one Group, LEAD_GROUP, whose permissions overview/lead_permissions.py keeps up
to date after each migrate. Membership follows the role: `add_user --role`, `load_demo` and the user admin call
sync_role_group. The admin itself still needs is_staff (`add_user --staff`).
"""

from __future__ import annotations

from django.contrib.auth.models import Group

from evals.models import Role, User

LEAD_GROUP = "lead"


def sync_role_group(user: User) -> None:
    """Put a lead (of any workspace) in the lead group and take anyone else out of it.

    The group gives the admin's permissions; what a lead sees there is filtered to the workspaces they lead.
    """
    group, _ = Group.objects.get_or_create(name=LEAD_GROUP)
    user.forget_workspace_roles()
    if Role.LEAD in user.workspace_roles().values() and user.is_active:
        user.groups.add(group)
    else:
        user.groups.remove(group)
