"""Tokens made the way a lead makes them (on the gate page, with their scopes), and API calls with them."""

from __future__ import annotations

import json
from urllib.parse import urlencode

from django.urls import reverse


def create_token(
    client,
    lead,
    scopes: list[str],
    rubric_version,
    pattern: str = "*",
    project: str = "refund-bot CI",
    judges: tuple[str, ...] = (),
    workspace=None,
    **fields,
):
    """Create a token on the gate page and read the secret off the page. `judges`: the imported judge configs a
    push token may push verdicts into; `workspace`: the one the lead works in (the token's; their first unless
    given); `fields`: the form's other fields (a traces token's)."""
    client.force_login(lead)
    data = {"project": project, "rubric_version": rubric_version.pk, "eval_set_pattern": pattern, "scopes": scopes}
    data.update(fields)
    data["judges"] = "\n".join(judges)
    url = reverse("calibration:create_token")
    response = client.post(url if workspace is None else f"{url}?workspace={workspace.slug}", data)
    assert response.status_code == 200 and response["Cache-Control"] == "no-store"
    body = response.content.decode()
    start = body.index('id="new-token">') + len('id="new-token">')
    client.logout()
    return body[start : body.index("<", start)]


def call(client, method: str, path: str, token: str | None, body=None, content_type="application/json", **query):
    headers = {"HTTP_AUTHORIZATION": f"Bearer {token}"} if token is not None else {}
    url = path if not query else f"{path}?{urlencode(query, doseq=True)}"
    if body is not None and not isinstance(body, str | bytes):
        body = json.dumps(body)
    if method == "GET":
        return client.get(url, **headers)
    return client.post(url, data=body if body is not None else b"", content_type=content_type, **headers)
