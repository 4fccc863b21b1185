"""What the role map gives a person, written to their account: the one place sign-in touches roles.

Until workspaces exist (issue #36 items 1-2) a person has one global role, so the highest role the map gives
them in any workspace becomes that role; with workspaces this becomes their memberships, exactly what the map
gives them now. Called inside the sign-in's transaction: a refusal here leaves nothing made.
"""

from __future__ import annotations

from collections.abc import Mapping

from evals.models import User

from .refusals import SignInRefused
from .role_map import ROLES, describe


def set_memberships(user: User, roles: Mapping[str, str]) -> None:
    """Make `user`'s roles exactly what `roles` ({workspace slug: role}) gives; refuse when it gives none."""
    if not roles:
        raise SignInRefused("no-workspace", f"user {user.username!r}: no group maps to a workspace")
    highest = max(roles.values(), key=ROLES.index)
    if user.role != highest:
        user.role = highest
        user.save(update_fields=["role"])


def summary(roles: Mapping[str, str]) -> str:
    return describe(roles)
