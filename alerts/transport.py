"""One HTTP POST to a webhook, to the address that was checked (docs/security.md, "Alerts go only where allowed").

The host's name is resolved once; every address it gives is checked (alerts/rules.py: no private, loopback,
link-local or multicast address unless the operator allows private ones), and the connection is made to the
checked address itself, with the name kept for the Host header and TLS (SNI and the certificate's name). A
second lookup at connect time, which a DNS server could answer differently (DNS rebinding), never happens.
http.client follows no redirect: a 3xx is the answer, and the sender fails the delivery on it. Every network
step has the short timeout the operator sets.
"""

from __future__ import annotations

import http.client
import socket
import ssl
from dataclasses import dataclass
from urllib.parse import urlsplit

from judging.backends import retry_after_seconds, tls_context

from .rules import address_refusal

EXCERPT_BYTES = 500  # of a receiver's answer, kept in the log to say why it refused


class Refused(Exception):
    """The operator's rules forbid this send (a host or address not allowed, a secret variable not readable):
    trying again will not help until the operator or the lead changes something."""


class SendFailed(Exception):
    def __init__(self, reason: str, *, retryable: bool, status: int | None = None, retry_after: float | None = None):
        super().__init__(reason)
        self.reason = reason
        self.retryable = retryable
        self.status = status
        self.retry_after = retry_after


@dataclass(frozen=True)
class Answer:
    status: int
    excerpt: str
    retry_after: float | None
    location_host: str  # where a redirect pointed (its host only)


def _connect(addresses: list[str], port: int, timeout: float | None) -> socket.socket:
    """A connection to the first of the checked `addresses` that answers (a name may have an IPv6 and an IPv4
    address, and a receiver listen on one of them only)."""
    failure: OSError | None = None
    for address in addresses:
        try:
            return socket.create_connection((address, port), timeout)
        except OSError as exc:
            failure = exc
    assert failure is not None  # checked_addresses never gives an empty list
    raise failure


class _PinnedHTTPConnection(http.client.HTTPConnection):
    def __init__(self, host: str, port: int, addresses: list[str], timeout: float):
        super().__init__(host, port, timeout=timeout)
        self._addresses = addresses

    def connect(self) -> None:
        self.sock = _connect(self._addresses, self.port, self.timeout)


class _PinnedHTTPSConnection(http.client.HTTPSConnection):
    def __init__(self, host: str, port: int, addresses: list[str], timeout: float, context: ssl.SSLContext):
        super().__init__(host, port, timeout=timeout, context=context)
        self._addresses = addresses
        self._tls = context

    def connect(self) -> None:
        self.sock = self._tls.wrap_socket(_connect(self._addresses, self.port, self.timeout), server_hostname=self.host)


def checked_addresses(host: str, port: int, *, allow_private: bool) -> list[str]:
    """The addresses `host` resolves to, all of them allowed; Refused if any is not (a name that also points
    inside the network is refused whole), SendFailed (retryable) if it does not resolve."""
    try:
        infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    except (socket.gaierror, UnicodeError) as exc:
        raise SendFailed(f"the host {host} does not resolve ({exc})", retryable=True) from None
    addresses = list(dict.fromkeys(str(info[4][0]) for info in infos))
    for address in addresses:
        problem = address_refusal(address, allow_private)
        if problem:
            raise Refused(problem)
    if not addresses:
        raise SendFailed(f"the host {host} resolves to no address", retryable=True)
    return addresses


def post(url: str, body: bytes, headers: dict[str, str], *, allow_private: bool, timeout: float) -> Answer:
    """POST `body` to `url` (already checked against the host list) at a checked address; the answer, whatever
    its status. SendFailed (retryable) when no answer came (refused connection, timeout, TLS failure)."""
    parts = urlsplit(url)
    host = parts.hostname or ""
    port = parts.port or (443 if parts.scheme == "https" else 80)
    addresses = checked_addresses(host, port, allow_private=allow_private)
    connection: http.client.HTTPConnection
    if parts.scheme == "https":
        connection = _PinnedHTTPSConnection(host, port, addresses, timeout, tls_context())
    else:
        connection = _PinnedHTTPConnection(host, port, addresses, timeout)
    target = (parts.path or "/") + (f"?{parts.query}" if parts.query else "")
    try:
        connection.request("POST", target, body=body, headers={"Content-Type": "application/json", **headers})
        response = connection.getresponse()
        excerpt = response.read(EXCERPT_BYTES).decode("utf-8", "replace")
        location = response.getheader("Location") or ""
        return Answer(
            status=response.status,
            excerpt=" ".join(excerpt.split()),
            retry_after=retry_after_seconds({name.lower(): value for name, value in response.getheaders()}),
            location_host=_host_of(location),
        )
    except ssl.SSLError as exc:
        raise SendFailed(f"TLS with {host} failed ({exc.reason or exc})", retryable=True) from None
    except (OSError, http.client.HTTPException) as exc:
        reason = "timed out" if isinstance(exc, TimeoutError) else f"{type(exc).__name__}: {exc}"
        raise SendFailed(f"no answer from {host}:{port} ({reason})", retryable=True) from None
    finally:
        connection.close()


def _host_of(location: str) -> str:
    try:
        netloc = urlsplit(location.strip()).netloc
    except ValueError:
        return ""
    return netloc.rpartition("@")[2].lower()[:100]
