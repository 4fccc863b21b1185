"""Failed token attempts are limited per client address on the API and the HTTP gate (config/token_throttle.py);
calls with a valid token are never counted."""

from __future__ import annotations

import pytest
from django.conf import settings

from tests.api_helpers import call, create_token
from tests.factories import make_rubric_version

pytestmark = pytest.mark.django_db

REPORT = {"eval_set": "cal", "rubric": "refund@1", "judge": "j"}


@pytest.fixture
def limit(settings):
    settings.API_TOKEN_FAILURE_LIMIT = 5
    return 5


def test_the_documented_limit_is_thirty_failures_a_minute():
    assert (settings.API_TOKEN_FAILURE_LIMIT, settings.API_TOKEN_FAILURE_WINDOW) == (30, 60)


def test_after_the_limit_of_unknown_tokens_an_address_gets_429_with_retry_after(client, limit):
    for i in range(limit):
        response = call(client, "GET", "/api/calibration-report", f"icw_guess-{i}", **REPORT)
        assert response.status_code == 401
    refused = call(client, "GET", "/api/calibration-report", "icw_guess-next", **REPORT)
    assert refused.status_code == 429
    assert 1 <= int(refused["Retry-After"]) <= 60
    assert "too many requests without a valid token" in refused.json()["error"]
    # The HTTP gate's old address shares the count, and a missing token is refused the same way.
    assert client.post("/calibration/api/gate", {}, content_type="application/json").status_code == 429
    assert call(client, "POST", "/api/gate", None, {}).status_code == 429


def test_missing_and_revoked_tokens_and_the_old_gate_address_count_too(client, limit):
    for _ in range(limit - 1):
        assert call(client, "POST", "/api/gate", None, {}).status_code == 401
    gate = client.post("/calibration/api/gate", {}, content_type="application/json", HTTP_AUTHORIZATION="Bearer x")
    assert gate.status_code == 401
    assert call(client, "POST", "/api/gate", "icw_x", {}).status_code == 429


def test_another_address_is_not_throttled_by_the_first(client, limit):
    for _ in range(limit + 1):
        call(client, "GET", "/api/calibration-report", "icw_guess", **REPORT)
    elsewhere = client.get("/api/calibration-report", REPORT, HTTP_AUTHORIZATION="Bearer icw_x", REMOTE_ADDR="10.9.9.9")
    assert elsewhere.status_code == 401


def test_behind_a_trusted_proxy_the_client_address_counts(client, limit, settings):
    settings.ICEWATER_TRUSTED_PROXIES = 1
    for _ in range(limit):
        client.get("/api/calibration-report", REPORT, HTTP_AUTHORIZATION="Bearer x", HTTP_X_FORWARDED_FOR="192.0.2.7")
    blocked = client.get("/api/calibration-report", REPORT, HTTP_X_FORWARDED_FOR="192.0.2.7")
    other_client = client.get("/api/calibration-report", REPORT, HTTP_X_FORWARDED_FOR="192.0.2.8")
    assert (blocked.status_code, other_client.status_code) == (429, 401)


def test_calls_with_a_valid_token_are_never_counted(client, lead, limit):
    token = create_token(client, lead, ["report"], make_rubric_version("refund", "1"))
    for _ in range(limit * 3):
        # 404 (no such eval set) is an answer to a valid token, not a failed token attempt.
        assert call(client, "GET", "/api/calibration-report", token, **REPORT).status_code == 404
    for _ in range(limit - 1):
        call(client, "GET", "/api/calibration-report", "icw_wrong", **REPORT)
    assert call(client, "GET", "/api/calibration-report", token, **REPORT).status_code == 404


def test_pages_outside_the_api_are_not_throttled(client, limit):
    for _ in range(limit + 1):
        call(client, "GET", "/api/calibration-report", "icw_guess", **REPORT)
    assert client.get("/accounts/login/").status_code == 200
