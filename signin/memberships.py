"""What the role map gives a person, written to their memberships: the one place sign-in touches roles.

The provider's memberships (source `oidc`) are exactly what the person's groups give now: one in each mapped
workspace that exists, with the role the map gives there (taking over a membership a lead had added in Icewater
in that workspace), and none elsewhere. Memberships a lead added in other workspaces (source `local`) stay: the
site's own decisions, which the groups claim does not speak for (evals.models.MembershipSource).
"""

from __future__ import annotations

import logging
from collections.abc import Mapping

from django.db import transaction

from evals.models import Membership, MembershipSource, User, Workspace

from .refusals import SignInRefused
from .role_map import describe

logger = logging.getLogger("icewater.signin")


@transaction.atomic
def set_memberships(user: User, roles: Mapping[str, str]) -> dict[str, str]:
    """Make `user`'s provider memberships exactly `roles` ({workspace slug: role}) in the workspaces that exist,
    and return what was given; refuse, changing nothing, when none of those workspaces exists."""
    workspaces = {workspace.slug: workspace for workspace in Workspace.objects.filter(slug__in=list(roles))}
    missing = sorted(set(roles) - set(workspaces))
    if missing:
        # A map naming a workspace nobody made is the configuration's mistake, not the person's: said once per sign-in.
        logger.warning("ICEWATER_OIDC_ROLE_MAP names workspaces that do not exist: %s", ", ".join(missing))
    given = {slug: role for slug, role in roles.items() if slug in workspaces}
    if not given:
        raise SignInRefused("no-workspace", f"user {user.username!r}: {describe(roles)} name no existing workspace")
    Membership.objects.filter(user=user, source=MembershipSource.OIDC).exclude(workspace__slug__in=list(given)).delete()
    for slug, role in given.items():
        Membership.objects.update_or_create(
            user=user, workspace=workspaces[slug], defaults={"role": role, "source": MembershipSource.OIDC}
        )
    return given
