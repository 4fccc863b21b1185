"""The operator's rules for alert destinations, as pure functions (no Django): config/settings.py checks the
operator's lists with them at start-up; the form, the `alert_destination` command and the sender (at send time)
check a destination against them.

- ICEWATER_ALERT_HOSTS: the hosts a webhook may name, in the syntax of ICEWATER_JUDGE_BASE_URL_HOSTS and matched
  by the same function (judging/allowlist.py). Empty by default: nothing is sent anywhere until the operator
  names a host (hooks.slack.com, the team's receiver).
- https only, except to a loopback name (localhost, 127.0.0.1, [::1]) that is on the list.
- The addresses the name resolves to: private, loopback, link-local, multicast, reserved and unspecified ones
  are refused unless ICEWATER_ALERT_PRIVATE_ADDRESSES=1 (a receiver inside the company's network), so a lead
  cannot point a webhook at the metadata service or the database through a public name.
- ICEWATER_ALERT_SECRET_VARS: the environment variables a generic webhook may take its HMAC secret from; the
  names reserved for judge keys (Icewater's own settings, the infrastructure's) are never readable.
"""

from __future__ import annotations

import ipaddress
from urllib.parse import urlsplit

from judging.allowlist import (
    ENV_NAME_RE,
    RESERVED_RULE,
    host_allowed,
    host_list_problem,
    host_not_allowed,
    reserved,
    url_problem,
    var_refusal,
)

HOSTS_SETTING = "ICEWATER_ALERT_HOSTS"
PRIVATE_SETTING = "ICEWATER_ALERT_PRIVATE_ADDRESSES"
SECRET_VARS_SETTING = "ICEWATER_ALERT_SECRET_VARS"
LOOPBACK_NAMES = ("localhost", "127.0.0.1", "::1")
# Retry-After is honoured up to this: a receiver cannot park an alert for a day.
RETRY_AFTER_CAP_S = 3600.0


def url_refusal(url: str, allowed_hosts: list[str] | tuple[str, ...]) -> str | None:
    """Why a webhook may not be sent to `url` (None: it may, as far as its name goes; see `address_refusal`)."""
    problem = url_problem(url)
    if problem:
        return f"the URL {problem}"
    if not host_allowed(url, allowed_hosts):
        refusal = host_not_allowed(url, allowed_hosts, "alerts may be sent to", HOSTS_SETTING)
        return f"{refusal}; the operator adds a host to {HOSTS_SETTING}"
    parts = urlsplit(url)
    if parts.scheme != "https" and (parts.hostname or "") not in LOOPBACK_NAMES:
        return "must be https:// (plain http:// only to a loopback host: localhost, 127.0.0.1, [::1])"
    return None


def address_refusal(address: str, allow_private: bool) -> str | None:
    """Why a webhook may not connect to the IP `address` a name resolved to (None: it may)."""
    ip = ipaddress.ip_address(address)
    if isinstance(ip, ipaddress.IPv6Address) and ip.ipv4_mapped is not None:
        ip = ip.ipv4_mapped
    if ip.is_multicast:
        return f"{address} is a multicast address"
    if allow_private:
        return None
    for what, hit in (
        ("loopback", ip.is_loopback),
        ("link-local", ip.is_link_local),
        ("private", ip.is_private),
        ("reserved", ip.is_reserved),
        ("unspecified", ip.is_unspecified),
    ):
        if hit:
            return (
                f"the host resolves to {address}, a {what} address; alerts go to public addresses only unless "
                f"the operator sets {PRIVATE_SETTING}=1"
            )
    return None


def secret_var_refusal(name: str, allowed: list[str] | tuple[str, ...]) -> str | None:
    """Why a generic webhook may not take its HMAC secret from variable `name` (None: it may)."""
    if not ENV_NAME_RE.match(name):
        return f"{name!r} is not an environment variable name"
    return var_refusal(name, allowed, reader=("an alert", "alerts"), setting=SECRET_VARS_SETTING)


def operator_lists_problem(secret_vars: list[str], hosts: list[str]) -> str | None:
    """One line saying what is wrong with the operator's alert lists (None: both are fine). For start-up."""
    for name in secret_vars:
        if not ENV_NAME_RE.match(name):
            return f"{SECRET_VARS_SETTING}: {name!r} is not an environment variable name"
        if reserved(name):
            return f"{SECRET_VARS_SETTING} lists {name}, which no alert may read ({RESERVED_RULE}); remove it"
    return host_list_problem(HOSTS_SETTING, hosts)


def retry_delay(attempts_done: int, delays: tuple[float, ...], retry_after: float | None) -> float | None:
    """Seconds until the next try after `attempts_done` failed ones, or None when that was the last.

    `delays` is the schedule (e.g. 30 s, 2 min, 8 min, 30 min: five tries in about 41 minutes). A receiver's
    Retry-After is honoured when it asks for longer, up to RETRY_AFTER_CAP_S."""
    if attempts_done < 1 or attempts_done > len(delays):
        return None
    delay = delays[attempts_done - 1]
    if retry_after is not None:
        delay = max(delay, min(retry_after, RETRY_AFTER_CAP_S))
    return delay


def retryable_status(status: int) -> bool:
    """A 5xx, 408 and 429 may pass; any other 4xx (and a redirect, which is never followed) will not."""
    return status >= 500 or status in (408, 429)
