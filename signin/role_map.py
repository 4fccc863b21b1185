"""The role map: which workspace and role each identity-provider group gives (ICEWATER_OIDC_ROLE_MAP).

Pure: no Django. `GROUP=WORKSPACE:ROLE`, comma-separated, e.g.
`refund-annotators=refund-support:annotator,refund-leads=refund-support:lead`. A person's memberships are
what their groups give now: one role per workspace, the highest when several of their groups name the same
workspace (a lead who is also in the annotators' group is a lead). Groups the map does not name give nothing.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

# Lowest first: the order decides which role wins when two groups name one workspace.
ROLES = ("annotator", "reviewer", "lead")
# A workspace's slug as Django's SlugField takes it.
SLUG = re.compile(r"^[-a-zA-Z0-9_]+$")


@dataclass(frozen=True)
class Grant:
    group: str
    workspace: str
    role: str


def parse_role_map(text: str) -> tuple[Grant, ...]:
    """The map's entries in the order written; ValueError with one line naming the first bad entry."""
    grants: list[Grant] = []
    seen: dict[str, Grant] = {}
    for raw in text.split(","):
        entry = raw.strip()
        if not entry:
            continue
        group, eq, target = entry.partition("=")
        workspace, colon, role = target.partition(":")
        group, workspace, role = group.strip(), workspace.strip(), role.strip()
        if not eq or not colon or not group or not workspace or not role:
            raise ValueError(f"entry {entry!r} is not GROUP=WORKSPACE:ROLE")
        if not SLUG.match(workspace):
            raise ValueError(f"entry {entry!r}: {workspace!r} is not a workspace slug (letters, digits, - and _)")
        if role not in ROLES:
            raise ValueError(f"entry {entry!r}: role {role!r} is not one of {', '.join(ROLES)}")
        grant = Grant(group, workspace, role)
        earlier = seen.get(f"{group}\0{workspace}")
        if earlier is not None and earlier != grant:
            # Two roles for one group in one workspace is a typo, not a wish: which one was meant?
            raise ValueError(f"group {group!r} is given two roles in workspace {workspace!r}")
        seen[f"{group}\0{workspace}"] = grant
        grants.append(grant)
    return tuple(grants)


def memberships_for(groups: Iterable[str], role_map: Iterable[Grant]) -> dict[str, str]:
    """{workspace slug: role} that these groups give; empty when no group is in the map."""
    held = set(groups)
    roles: dict[str, str] = {}
    for grant in role_map:
        if grant.group in held:
            current = roles.get(grant.workspace)
            if current is None or ROLES.index(grant.role) > ROLES.index(current):
                roles[grant.workspace] = grant.role
    return roles


def groups_from_claim(value: object) -> list[str] | None:
    """The groups a claim's value names: a list of strings, or one string; None when it is neither."""
    if isinstance(value, str):
        return [value]
    if isinstance(value, list) and all(isinstance(item, str) for item in value):
        return list(value)
    return None


def describe(roles: Mapping[str, str]) -> str:
    return ", ".join(f"{workspace}:{role}" for workspace, role in sorted(roles.items())) or "none"
