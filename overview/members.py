"""A workspace's members, as its leads manage them: who is in, with which role, how they sign in, how many labels
they gave here; adding, creating, changing and removing a membership.

Every change is recorded in the workspace's audit log (evals/audit_log.py). Two rules hold for every change:

- Memberships the identity provider keeps (source oidc) are not changed here: the groups claim replaces them at
  every sign-in, so a change here would silently come back (docs/security.md, "Workspaces").
- A workspace keeps at least one lead: the last lead can be neither removed nor given another role (the lead
  rows are locked while checking, so two leads demoting each other at once cannot both succeed).

Removing a membership deletes that row only: the person's labels, gold decisions and approvals stay with their
account, and their access ends at their next request (the request reads the memberships afresh).
"""

from __future__ import annotations

import secrets
from dataclasses import dataclass

from django.contrib.auth.validators import UnicodeUsernameValidator
from django.core.exceptions import ValidationError
from django.db import transaction
from django.db.models import Count

from evals.audit_log import record_membership
from evals.models import Membership, MembershipSource, Role, User, Workspace
from evals.role_groups import sync_role_group
from evals.workspaces import in_workspace
from labeling.models import Label


class MemberRefused(Exception):
    """The change is not allowed; the message says why and what to do instead. Nothing was changed."""


@dataclass(frozen=True)
class MemberRow:
    membership: Membership
    signs_in: str
    labels: int

    @property
    def managed_by_provider(self) -> bool:
        return self.membership.source == MembershipSource.OIDC


def signs_in_with(user: User, membership: Membership) -> str:
    """How the person signs in, in words: by password, through the identity provider, both, or not at all."""
    if not user.is_active:
        return "cannot sign in (account switched off)"
    ways = []
    if user.has_usable_password():
        ways.append("password")
    if membership.source == MembershipSource.OIDC:
        ways.append("identity provider")
    return " and ".join(ways) if ways else "identity provider only (no password)"


def labels_given(workspace: Workspace, user_ids: list[int]) -> dict[int, int]:
    """{user id: labels that count (current revisions in submitted annotations) for this workspace's outputs}, in
    one aggregate query whatever the number of people."""
    rows = (
        in_workspace(Label.objects.submitted(), workspace)
        .filter(annotation__annotator_id__in=user_ids)
        .values("annotation__annotator_id")
        .annotate(n=Count("id"))
        .values_list("annotation__annotator_id", "n")
    )
    return dict(rows)


def member_rows(workspace: Workspace) -> list[MemberRow]:
    """The workspace's members by username: two queries in all."""
    memberships = list(Membership.objects.filter(workspace=workspace).select_related("user").order_by("user__username"))
    counts = labels_given(workspace, [m.user_id for m in memberships])
    return [MemberRow(m, signs_in_with(m.user, m), counts.get(m.user_id, 0)) for m in memberships]


def add_member(*, workspace: Workspace, by: User, username: str, role: str) -> Membership:
    """Give an existing account `role` in `workspace`."""
    username = username.strip()
    user = User.objects.filter(username=username).first()
    if user is None:
        raise MemberRefused(f"No account is named {username!r}: check the spelling, or create the account below.")
    with transaction.atomic():
        membership, created = Membership.objects.get_or_create(user=user, workspace=workspace, defaults={"role": role})
        if not created:
            role_now = membership.get_role_display().lower()
            raise MemberRefused(f"{username} is already a member ({role_now}): change their role in the list.")
        _changed(workspace, by, user, None, role)
    return membership


def create_member(*, workspace: Workspace, by: User, username: str, role: str) -> tuple[Membership, str]:
    """Make an account with a first password (returned, to be shown once) and `role` in `workspace`.

    The password is random (16 characters, about 96 bits); the lead hands it to the person, who changes it at
    /accounts/password/ after signing in. Only its hash is stored: the page that shows it holds the only copy.
    """
    username = username.strip()
    try:
        UnicodeUsernameValidator()(username)
    except ValidationError:
        raise MemberRefused(
            f"{username!r} is not a username: use 1-150 letters, digits and @ . + - _ (no spaces)."
        ) from None
    if len(username) > 150:
        raise MemberRefused("A username has at most 150 characters.")
    if User.objects.filter(username=username).exists():
        raise MemberRefused(f"An account named {username} exists already: add it with the form above instead.")
    password = secrets.token_urlsafe(12)
    with transaction.atomic():
        user = User(username=username, is_active=True)
        user.set_password(password)
        user.save()
        membership = Membership.objects.create(user=user, workspace=workspace, role=role)
        _changed(workspace, by, user, None, role, how="a new account")
    return membership, password


def change_role(*, membership: Membership, by: User, role: str) -> Membership:
    """Give the member another role in the membership's workspace."""
    with transaction.atomic():
        previous = _check_change(membership, to_role=role)
        if previous == role:
            return membership
        Membership.objects.filter(pk=membership.pk).update(role=role)
        membership.role = role
        _changed(membership.workspace, by, membership.user, previous, role)
    return membership


def remove_member(*, membership: Membership, by: User) -> None:
    """End the person's membership: their labels and gold stay, their access here ends at their next request."""
    with transaction.atomic():
        previous = _check_change(membership, to_role=None)
        Membership.objects.filter(pk=membership.pk).delete()
        _changed(membership.workspace, by, membership.user, previous, None)


def _check_change(membership: Membership, *, to_role: str | None) -> str:
    """Refuse a change of a provider-kept membership or one that leaves the workspace with no lead; the role now."""
    name = membership.user.username
    if membership.source == MembershipSource.OIDC:
        raise MemberRefused(
            f"{name}'s membership comes from the identity provider and is set again at each of their sign-ins: "
            "change their groups there (ICEWATER_OIDC_ROLE_MAP maps groups to workspaces and roles)."
        )
    # Lock the workspace's lead rows, so two changes at once see each other (the second waits for the first).
    leads = list(
        Membership.objects.select_for_update()
        .filter(workspace_id=membership.workspace_id, role=Role.LEAD)
        .values_list("pk", flat=True)
    )
    current = Membership.objects.filter(pk=membership.pk).values_list("role", flat=True).first()
    if current is None:
        raise MemberRefused(f"{name} is no longer a member of this workspace (someone removed them meanwhile).")
    if current == Role.LEAD and to_role != Role.LEAD and leads == [membership.pk]:
        raise MemberRefused(
            f"{name} is the last lead of this workspace, so nobody could manage it after this change: "
            "make another member a lead first. Nothing was changed."
        )
    return current


def _changed(
    workspace: Workspace, by: User, member: User, previous: str | None, role: str | None, how: str = ""
) -> None:
    sync_role_group(member)  # a lead (of any workspace) is in the admin's lead group, anyone else not
    record_membership(workspace, by, member, previous, role, how=how)
