"""The client's address for login throttling, behind as many reverse proxies as the operator says.

Each proxy that forwards a request appends the address it received the request from to
X-Forwarded-For, so with N trusted proxies in front the client is the N-th address from the right
(what the outermost of them saw). Anything further left was written by the client and is ignored:
prepending a made-up address does not make a new "client". With no trusted proxy (the default) the
client is REMOTE_ADDR, as django-axes reads it on its own.

django-axes' AXES_IPWARE_PROXY_COUNT (through django-ipware 8) counts proxies listed in the header, not the
addresses they saw, and prefers routable addresses: docs/security.md says where it differs from this rule.
"""

from __future__ import annotations

import ipaddress

from django.conf import settings
from django.http import HttpRequest


def client_ip(request: HttpRequest) -> str | None:
    """AXES_CLIENT_IP_CALLABLE. Falls back to REMOTE_ADDR when the header has fewer addresses than there are
    trusted proxies (the request did not pass through all of them) or the address found is not one."""
    remote = request.META.get("REMOTE_ADDR")
    count = settings.ICEWATER_TRUSTED_PROXIES
    if not count:
        return remote
    hops = [hop.strip() for hop in request.META.get("HTTP_X_FORWARDED_FOR", "").split(",")]
    hops = [hop for hop in hops if hop]
    if len(hops) < count:
        return remote
    try:
        return str(ipaddress.ip_address(hops[-count]))
    except ValueError:
        return remote
