"""The API's docs page in Chromium under the site's Content-Security-Policy: Swagger UI from our own files works."""

from __future__ import annotations

import pytest

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def test_swagger_ui_renders_every_endpoint_under_the_sites_csp(live_server, watched):
    make, violations, errors = watched
    page = make()
    outside: list[str] = []
    page.on("request", lambda r: outside.append(r.url) if not r.url.startswith(live_server.url) else None)
    response = page.goto(live_server.url + "/api/docs")
    assert "script-src 'self'" in response.headers["content-security-policy"]  # settings.CONTENT_SECURITY_POLICY
    page.locator(".opblock-summary-path", has_text="/api/outputs").first.wait_for()
    shown = page.locator(".opblock-summary-path").all_inner_texts()
    assert {"/api/outputs", "/api/verdicts", "/api/judge-runs", "/api/calibration-report", "/api/gate"} <= set(shown)
    page.locator(".opblock-summary-path", has_text="/api/outputs").first.click()  # open one: more of the UI runs
    page.get_by_text("filename", exact=True).first.wait_for()
    assert not violations and not errors, (violations, errors)
    assert not outside, outside  # no CDN, no font or image from elsewhere
