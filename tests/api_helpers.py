"""API tokens made the way a lead makes them (through the page), and calls with them."""

from __future__ import annotations

import json

from django.urls import reverse


def create_token(client, lead, scopes: list[str], project: str = "refund-bot CI") -> str:
    """Create an API token on the tokens page and read the secret off the page."""
    client.force_login(lead)
    response = client.post(reverse("api_tokens:create"), {"project": project, "scopes": scopes})
    assert response.status_code == 200 and response["Cache-Control"] == "no-store"
    body = response.content.decode()
    start = body.index('id="new-token">') + len('id="new-token">')
    client.logout()
    return body[start : body.index("<", start)]


def call(client, method: str, path: str, token: str | None, body=None, content_type="application/json", **query):
    headers = {"HTTP_AUTHORIZATION": f"Bearer {token}"} if token is not None else {}
    url = path if not query else f"{path}?{_query(query)}"
    if body is not None and not isinstance(body, str | bytes):
        body = json.dumps(body)
    if method == "GET":
        return client.get(url, **headers)
    return client.post(url, data=body if body is not None else b"", content_type=content_type, **headers)


def _query(query: dict) -> str:
    from urllib.parse import urlencode

    return urlencode(query, doseq=True)
