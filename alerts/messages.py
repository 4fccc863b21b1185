"""What an alert says: one AlertMessage, the same for every destination (docs/alerts.md).

The watch (and the page's "send a test alert") builds one and hands it to `alerts.delivery.send_alert`; each
destination's body is made from it at send time (alerts/bodies.py). It is stored as JSON with each delivery, so a
retry sends what the first try sent.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class AlertMessage:
    kind: str  # what raised it: "watch-alarm", "test", ...
    title: str
    text: str
    url: str  # an absolute link to the page that explains it; may be ""
    facts: tuple[tuple[str, str], ...]  # (name, value) pairs shown as a small table
    dedupe_key: str  # the same key to the same destination is delivered once

    def as_json(self) -> dict:
        return {
            "kind": self.kind,
            "title": self.title,
            "text": self.text,
            "url": self.url,
            "facts": [[name, value] for name, value in self.facts],
            "dedupe_key": self.dedupe_key,
        }

    @classmethod
    def from_json(cls, data: dict) -> AlertMessage:
        return cls(
            kind=str(data["kind"]),
            title=str(data["title"]),
            text=str(data["text"]),
            url=str(data.get("url", "")),
            facts=tuple((str(name), str(value)) for name, value in data.get("facts", [])),
            dedupe_key=str(data["dedupe_key"]),
        )
