"""Who the identity provider says a person is, read from the claims of a verified ID token and userinfo.

Pure but for the settings it is handed: the username (preferred_username, else sub), the email address (kept
only when the provider verified it, or when ICEWATER_OIDC_VERIFIED_EMAIL=0 says the provider never tells),
and the workspaces and roles the groups claim gives through the role map.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from django.contrib.auth.validators import UnicodeUsernameValidator
from django.core.exceptions import ValidationError

from .refusals import SignInRefused
from .role_map import Grant, groups_from_claim, memberships_for

USERNAME_MAX = 150  # AbstractUser.username


@dataclass(frozen=True)
class Person:
    username: str
    email: str
    roles: dict[str, str]


def username_from(claims: Mapping[str, Any]) -> str:
    username = claims.get("preferred_username") or claims.get("sub")
    if not isinstance(username, str) or not username:
        raise SignInRefused("missing-claim", "neither preferred_username nor sub is a string")
    try:
        UnicodeUsernameValidator()(username)
    except ValidationError:
        raise SignInRefused("missing-claim", f"username {username!r} has characters an account name cannot") from None
    if len(username) > USERNAME_MAX:
        raise SignInRefused("missing-claim", f"username is longer than {USERNAME_MAX} characters")
    return username


def email_from(claims: Mapping[str, Any], *, require_verified: bool, username: str) -> str:
    email = claims.get("email")
    if not isinstance(email, str) or not email:
        return ""
    # Some providers send the flag as a string.
    verified = claims.get("email_verified") in (True, "true")
    if require_verified and not verified:
        raise SignInRefused(
            "unverified-email", f"user {username!r}: email_verified is {claims.get('email_verified')!r}"
        )
    return email


def person_from(
    claims: Mapping[str, Any], *, groups_claim: str, role_map: Iterable[Grant], require_verified_email: bool
) -> Person:
    username = username_from(claims)
    email = email_from(claims, require_verified=require_verified_email, username=username)
    groups = groups_from_claim(claims.get(groups_claim))
    if groups is None:
        raise SignInRefused("no-workspace", f"user {username!r}: no list of groups in claim {groups_claim!r}")
    roles = memberships_for(groups, role_map)
    if not roles:
        raise SignInRefused("no-workspace", f"user {username!r}: groups {sorted(groups)} map to no workspace")
    return Person(username=username, email=email, roles=roles)
