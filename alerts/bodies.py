"""What each kind of destination receives for one AlertMessage: pure functions, no Django.

- Slack: the incoming-webhook format, `{"text": ..., "blocks": [...]}` (the text is the notification's and the
  fallback; the blocks are what Slack shows). Slack's mrkdwn treats &, < and > as markup, so they are escaped.
- Generic webhook: a JSON body signed with HMAC-SHA256 over f"{timestamp}.{body}", in the headers
  X-Icewater-Timestamp and X-Icewater-Signature: v1=<hex> (docs/alerts.md says how a receiver checks it).
- Email: a subject and a plain-text body.
"""

from __future__ import annotations

import hashlib
import hmac
import json

from .messages import AlertMessage

SIGNATURE_VERSION = "v1"
TIMESTAMP_HEADER = "X-Icewater-Timestamp"
SIGNATURE_HEADER = "X-Icewater-Signature"
DELIVERY_HEADER = "X-Icewater-Delivery"  # the same on every try of one delivery: a receiver may drop repeats
SLACK_FIELDS = 10  # Slack shows at most 10 fields in a section block
SLACK_HEADER_CHARS = 150  # a header block's plain text is at most 150 characters
SLACK_TEXT_CHARS = 3000  # a section's text is at most 3,000 characters


def slack_escape(text: str) -> str:
    return text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")


def _cut(text: str, most: int) -> str:
    return text if len(text) <= most else text[: most - 1] + "…"


def slack_body(message: AlertMessage) -> dict:
    blocks: list[dict] = [
        {"type": "header", "text": {"type": "plain_text", "text": _cut(message.title, SLACK_HEADER_CHARS)}},
        {"type": "section", "text": {"type": "mrkdwn", "text": _cut(slack_escape(message.text), SLACK_TEXT_CHARS)}},
    ]
    if message.facts:
        fields = [
            {"type": "mrkdwn", "text": _cut(f"*{slack_escape(name)}*\n{slack_escape(value)}", 2000)}
            for name, value in message.facts[:SLACK_FIELDS]
        ]
        blocks.append({"type": "section", "fields": fields})
    if message.url:
        # In a link, | ends the address; a URL never needs one unescaped.
        link = message.url.replace("|", "%7C").replace(">", "%3E")
        blocks.append({"type": "section", "text": {"type": "mrkdwn", "text": f"<{link}|Open in Icewater>"}})
    # The text is the notification's and the fallback: mrkdwn as well.
    return {"text": _cut(slack_escape(f"{message.title}: {message.text}"), SLACK_TEXT_CHARS), "blocks": blocks}


def webhook_body(message: AlertMessage, *, delivery: int, workspace: str) -> dict:
    return {
        **message.as_json(),
        "facts": [{"name": name, "value": value} for name, value in message.facts],
        "delivery": delivery,
        "workspace": workspace,
    }


def encode(body: dict) -> bytes:
    """The bytes sent (and signed): compact JSON in UTF-8."""
    return json.dumps(body, ensure_ascii=False, separators=(",", ":")).encode()


def signature(secret: str, timestamp: int, body: bytes) -> str:
    """The X-Icewater-Signature value: v1= and the hex HMAC-SHA256 of b"<timestamp>." + body under `secret`."""
    digest = hmac.new(secret.encode(), f"{timestamp}.".encode() + body, hashlib.sha256).hexdigest()
    return f"{SIGNATURE_VERSION}={digest}"


def signed_headers(secret: str, timestamp: int, body: bytes, delivery: int) -> dict[str, str]:
    return {
        TIMESTAMP_HEADER: str(timestamp),
        SIGNATURE_HEADER: signature(secret, timestamp, body),
        DELIVERY_HEADER: str(delivery),
    }


def email_subject(message: AlertMessage) -> str:
    # A header line: no line breaks (Django refuses them in a subject).
    return _cut(" ".join(f"[Icewater] {message.title}".split()), 200)


def email_text(message: AlertMessage) -> str:
    lines = [message.title, "", message.text]
    if message.facts:
        width = max(len(name) for name, _ in message.facts)
        lines += ["", *(f"{name.ljust(width)}  {value}" for name, value in message.facts)]
    if message.url:
        lines += ["", message.url]
    return "\n".join(lines) + "\n"
