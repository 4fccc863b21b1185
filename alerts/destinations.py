"""A workspace's alert destinations: what makes one valid, and making, changing and removing one.

The page's form and the `alert_destination` command both check through `problems`, with the operator's rules
as the process has them; the sender checks again at send time (alerts/sending.py), since the operator may
narrow a list after a destination was saved.
"""

from __future__ import annotations

from urllib.parse import urlsplit

from django.conf import settings
from django.core.exceptions import ValidationError
from django.core.validators import validate_email
from django.db import transaction

from evals import audit_log
from evals.models import AuditAction, User, Workspace
from evals.workspaces import in_workspace

from .models import AlertDestination, DestinationKind
from .rules import secret_var_refusal, url_refusal
from .transport import Refused, SendFailed, checked_addresses

MAX_ADDRESSES = 20


class DestinationRefused(Exception):
    def __init__(self, problems: list[tuple[str, str]]):
        super().__init__("; ".join(f"{field}: {message}" for field, message in problems))
        self.problems = problems


def parse_addresses(text: str) -> list[str]:
    """Addresses one a line, or separated by commas."""
    return [part.strip() for line in text.splitlines() for part in line.split(",") if part.strip()]


def problems(kind: str, url: str, addresses: list[str], secret_env: str) -> list[tuple[str, str]]:
    """(field, why) for each thing wrong with a destination of `kind`; [] when it may be saved."""
    found: list[tuple[str, str]] = []
    if kind not in DestinationKind.values:
        return [("kind", f"must be one of {', '.join(DestinationKind.values)}")]
    if kind == DestinationKind.EMAIL:
        if not addresses:
            found.append(("addresses", "give at least one email address"))
        if len(addresses) > MAX_ADDRESSES:
            found.append(("addresses", f"at most {MAX_ADDRESSES} addresses"))
        for address in addresses:
            try:
                validate_email(address)
            except ValidationError:
                found.append(("addresses", f"{address!r} is not an email address"))
        return found
    if not url:
        return [("url", "a webhook needs its URL")]
    problem = url_refusal(url, settings.ICEWATER_ALERT_HOSTS)
    if problem:
        found.append(("url", problem))
    else:
        found += _address_problems(url)
    if kind == DestinationKind.WEBHOOK:
        if not secret_env:
            found.append(("secret_env", "a signed webhook needs the name of the variable holding its secret"))
        else:
            problem = secret_var_refusal(secret_env, settings.ICEWATER_ALERT_SECRET_VARS)
            if problem:
                found.append(("secret_env", problem))
    return found


def _address_problems(url: str) -> list[tuple[str, str]]:
    """The addresses the host resolves to now; a name that does not resolve here is not refused (it may on the
    workers), and the sender checks again at each try."""
    parts = urlsplit(url)
    port = parts.port or (443 if parts.scheme == "https" else 80)
    try:
        checked_addresses(parts.hostname or "", port, allow_private=settings.ICEWATER_ALERT_PRIVATE_ADDRESSES)
    except Refused as exc:
        return [("url", str(exc))]
    except SendFailed:
        return []
    return []


def _fields(kind: str, url: str, addresses: list[str], secret_env: str) -> dict:
    # Only what the kind uses is kept: a Slack URL left in an email destination's row would be a credential
    # stored for nothing.
    return {
        "kind": kind,
        "url": url if kind != DestinationKind.EMAIL else "",
        "addresses": "\n".join(addresses) if kind == DestinationKind.EMAIL else "",
        "secret_env": secret_env if kind == DestinationKind.WEBHOOK else "",
    }


def _check(workspace: Workspace, name: str, fields: dict, exclude: int | None = None) -> None:
    found = problems(fields["kind"], fields["url"], parse_addresses(fields["addresses"]), fields["secret_env"])
    name = name.strip()
    if not name:
        found.insert(0, ("name", "give the destination a name"))
    taken = in_workspace(AlertDestination, workspace).filter(name=name)
    if exclude is not None:
        taken = taken.exclude(pk=exclude)
    if name and taken.exists():
        found.insert(0, ("name", f"this workspace has a destination {name!r} already"))
    if found:
        raise DestinationRefused(found)


@transaction.atomic
def add_destination(
    *,
    workspace: Workspace,
    by: User | None,
    name: str,
    kind: str,
    url: str = "",
    addresses: str = "",
    secret_env: str = "",
) -> AlertDestination:
    fields = _fields(kind, url.strip(), parse_addresses(addresses), secret_env.strip())
    _check(workspace, name, fields)
    made = AlertDestination.objects.create(workspace=workspace, name=name.strip(), created_by=by, **fields)
    _logged(made, by, AuditAction.ALERT_DESTINATION_ADDED, f"Alert destination {made.name} added ({made.kind})")
    return made


def _logged(destination: AlertDestination, by: User | None, action: AuditAction, summary: str, **detail) -> None:
    """The workspace's audit log: where alerts go is a decision its leads must be able to trace. The target as the
    page shows it (a Slack URL's path is its credential, never logged)."""
    audit_log.record(
        destination.workspace_id,
        by,
        action,
        summary,
        destination=destination.pk,
        name=destination.name,
        kind=destination.kind,
        to=target(destination),
        **detail,
    )


@transaction.atomic
def change_destination(
    destination: AlertDestination,
    *,
    name: str,
    kind: str,
    url: str = "",
    addresses: str = "",
    secret_env: str = "",
    by: User | None = None,
) -> AlertDestination:
    fields = _fields(kind, url.strip(), parse_addresses(addresses), secret_env.strip())
    _check(destination.workspace, name, fields, exclude=destination.pk)
    before = destination.name
    for key, value in {"name": name.strip(), **fields}.items():
        setattr(destination, key, value)
    destination.save()
    said = f"Alert destination {before} changed" + (f" (now {destination.name})" if before != destination.name else "")
    _logged(destination, by, AuditAction.ALERT_DESTINATION_CHANGED, said, previous_name=before)
    return destination


@transaction.atomic
def set_enabled(destination: AlertDestination, enabled: bool, by: User | None = None) -> None:
    destination.enabled = enabled
    destination.save(update_fields=["enabled"])
    said = f"Alert destination {destination.name} switched {'on' if enabled else 'off'}"
    _logged(destination, by, AuditAction.ALERT_DESTINATION_CHANGED, said, enabled=enabled)


@transaction.atomic
def remove_destination(destination: AlertDestination, by: User | None = None) -> None:
    """Its deliveries stay in the log, with the destination's name (AlertDelivery.destination_name)."""
    _logged(destination, by, AuditAction.ALERT_DESTINATION_REMOVED, f"Alert destination {destination.name} removed")
    destination.delete()


def shown_url(destination: AlertDestination) -> str:
    """The URL as the page shows it: a Slack webhook's path is its credential, so only the host is shown."""
    if destination.kind == DestinationKind.SLACK and destination.url:
        return f"https://{urlsplit(destination.url).netloc}/…"
    return destination.url


def target(destination: AlertDestination) -> str:
    """Where a destination sends, as lists and the audit log show it: its addresses, or its URL as shown."""
    if destination.kind == DestinationKind.EMAIL:
        return ", ".join(destination.address_list())
    return shown_url(destination)
