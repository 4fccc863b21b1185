"""Real receivers on loopback for the alert tests: an HTTP receiver that checks the HMAC signature with its own
code (not alerts/bodies.py), and an SMTP server (aiosmtpd). Fixtures `receiver` and `smtp_server` in
tests/conftest.py."""

from __future__ import annotations

import hashlib
import hmac
import json
import socket
import threading
import time
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from aiosmtpd.controller import Controller

REPLAY_WINDOW_S = 300  # what a receiver should allow between the timestamp and its clock (docs/alerts.md)


def receiver_accepts(secret: str, headers, body: bytes, now: float | None = None) -> bool:
    """The check a receiver makes, written from docs/alerts.md alone: HMAC-SHA256 under the shared secret of the
    timestamp header, a dot and the raw body, compared in constant time; the timestamp within 5 minutes."""
    timestamp = headers.get("X-Icewater-Timestamp", "")
    given = headers.get("X-Icewater-Signature", "")
    if not timestamp.isdigit() or not given.startswith("v1="):
        return False
    mac = hmac.new(secret.encode(), timestamp.encode() + b"." + body, hashlib.sha256).hexdigest()
    fresh = abs((time.time() if now is None else now) - int(timestamp)) <= REPLAY_WINDOW_S
    return hmac.compare_digest(mac, given[3:]) and fresh


@dataclass
class Received:
    path: str
    headers: dict[str, str]
    body: bytes
    answered: int
    signature_ok: bool | None  # None: the receiver checks no signature

    def json(self) -> dict:
        return json.loads(self.body)


@dataclass
class Answer:
    status: int
    headers: dict[str, str] = field(default_factory=dict)
    delay_s: float = 0.0


class Receiver:
    """An HTTP server on 127.0.0.1 that answers each POST with the next of `answers` (the last one again once
    they run out), after checking the signature when it has a `secret` (401 when it fails)."""

    def __init__(self):
        self.answers: list[Answer] = [Answer(200)]
        self.secret: str | None = None
        self.received: list[Received] = []
        self._lock = threading.Lock()
        owner = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self):  # noqa: N802 (http.server's name)
                body = self.rfile.read(int(self.headers.get("Content-Length", "0")))
                owner._answer(self, body)

            def log_message(self, *args):
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.port = self.server.server_address[1]
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    @property
    def host(self) -> str:
        return f"127.0.0.1:{self.port}"

    def url(self, path: str = "/hook") -> str:
        return f"http://127.0.0.1:{self.port}{path}"

    def _answer(self, handler: BaseHTTPRequestHandler, body: bytes) -> None:
        headers = {name: value for name, value in handler.headers.items()}
        signature_ok = receiver_accepts(self.secret, handler.headers, body) if self.secret is not None else None
        with self._lock:
            answer = self.answers[min(len(self.received), len(self.answers) - 1)]
            status = 401 if signature_ok is False else answer.status
            self.received.append(Received(handler.path, headers, body, status, signature_ok))
        if answer.delay_s:
            time.sleep(answer.delay_s)
        handler.send_response(status)
        for name, value in answer.headers.items():
            handler.send_header(name, value)
        text = b"signature refused" if status == 401 else b"ok" if status < 300 else b"no thanks"
        handler.send_header("Content-Length", str(len(text)))
        handler.end_headers()
        handler.wfile.write(text)

    def accepted(self) -> list[Received]:
        return [r for r in self.received if 200 <= r.answered < 300]

    def stop(self) -> None:
        self.server.shutdown()
        self.server.server_close()


class _Mailbox:
    def __init__(self):
        self.messages: list[tuple[str, list[str], bytes]] = []

    async def handle_DATA(self, server, session, envelope):  # noqa: N802 (aiosmtpd's name)
        self.messages.append((envelope.mail_from, list(envelope.rcpt_tos), envelope.content))
        return "250 Message accepted for delivery"


class SmtpServer:
    """aiosmtpd on a free loopback port: every message it accepts is in `messages` (from, to, raw content)."""

    def __init__(self):
        self.mailbox = _Mailbox()
        with socket.socket() as probe:  # Controller checks its own start by connecting: it needs a real port
            probe.bind(("127.0.0.1", 0))
            self.port = probe.getsockname()[1]
        self.controller = Controller(self.mailbox, hostname="127.0.0.1", port=self.port)
        self.controller.start()

    @property
    def messages(self):
        return self.mailbox.messages

    def stop(self) -> None:
        self.controller.stop()
