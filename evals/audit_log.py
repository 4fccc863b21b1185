"""The workspace's audit log: `record` writes one event for each decision that matters (AuditAction), called where
the decision is made (approvals, gating marks and reviews, API tokens, memberships, add_workspace and add_user).

An event is written in the same transaction as the decision when the caller is inside one, so a decision that
is rolled back leaves no event behind. docs/security.md, "Workspaces", says what is recorded and who reads it.
"""

from __future__ import annotations

from typing import Any

from evals.models import AuditAction, AuditEvent, User, Workspace

SUMMARY_MAX = AuditEvent._meta.get_field("summary").max_length or 500


def record(
    workspace: Workspace | int, actor: User | None, action: AuditAction | str, summary: str, **detail: Any
) -> AuditEvent:
    """Add one event to `workspace`'s log. `detail`: its particulars (ids, names, reasons) as JSON values."""
    AuditAction(action)  # an unknown action is a programming error: fail here, not on a page that reads it
    if len(summary) > SUMMARY_MAX:
        summary = summary[: SUMMARY_MAX - 1] + "…"
    return AuditEvent.objects.create(
        workspace_id=workspace if isinstance(workspace, int) else workspace.pk,
        actor=actor,
        actor_name=actor.username if actor is not None else "",
        action=action,
        summary=summary,
        detail=detail,
    )


def record_membership(
    workspace: Workspace | int, actor: User | None, member: User, previous: str | None, role: str | None, how: str = ""
) -> AuditEvent | None:
    """Record a membership change: `previous` and `role` are the member's role before and after (None: no
    membership). Nothing is recorded when nothing changed. `how`: where it was changed, when not by a person."""
    if previous == role:
        return None
    where = f" ({how})" if how else ""
    if previous is None:
        action, summary = AuditAction.MEMBER_ADDED, f"added {member.username} as {role}{where}"
    elif role is None:
        action, summary = AuditAction.MEMBER_REMOVED, f"removed {member.username} (was {previous}){where}"
    else:
        action, summary = AuditAction.MEMBER_ROLE_CHANGED, f"{member.username}: {previous} → {role}{where}"
    return record(
        workspace, actor, action, summary, user=member.pk, username=member.username, role=role, previous=previous
    )
