"""The operator's rules for alert destinations (alerts/rules.py), without a database."""

from __future__ import annotations

import pytest

from alerts.rules import (
    address_refusal,
    operator_lists_problem,
    retry_delay,
    retryable_status,
    secret_var_refusal,
    url_refusal,
)

HOSTS = ["hooks.slack.com", "*.example.org", "127.0.0.1:8080"]


@pytest.mark.parametrize(
    "url",
    ["https://hooks.slack.com/services/T0/B0/x", "https://alerts.example.org/in", "http://127.0.0.1:8080/hook"],
)
def test_a_url_on_the_list_is_allowed(url):
    assert url_refusal(url, HOSTS) is None


def test_a_host_off_the_list_is_refused_naming_the_setting_to_change():
    refusal = url_refusal("https://evil.example.com/hook", HOSTS)
    assert refusal is not None
    assert "evil.example.com is not a host alerts may be sent to" in refusal
    assert "ICEWATER_ALERT_HOSTS allows: hooks.slack.com, *.example.org, 127.0.0.1:8080" in refusal


def test_the_matching_is_the_judges_own():
    # host:port allows that port only; *.domain every subdomain but not the domain itself.
    assert url_refusal("http://127.0.0.1:9090/hook", HOSTS) is not None
    assert url_refusal("https://example.org/hook", HOSTS) is not None
    assert url_refusal("https://a.b.example.org/hook", HOSTS) is None


def test_plain_http_is_refused_except_to_a_loopback_host():
    assert "must be https://" in url_refusal("http://hooks.slack.com/services/x", HOSTS)
    assert url_refusal("http://localhost/hook", ["localhost"]) is None


@pytest.mark.parametrize(
    "url",
    ["ftp://hooks.slack.com/x", "https://user@hooks.slack.com/x", "https://hooks.slack.com/x\r\nHost: a", ""],
)
def test_a_url_that_is_not_plain_is_refused(url):
    assert url_refusal(url, HOSTS) is not None


@pytest.mark.parametrize(
    ("address", "what"),
    [
        ("127.0.0.1", "loopback"),
        ("::1", "loopback"),
        ("10.1.2.3", "private"),
        ("192.168.0.10", "private"),
        ("169.254.169.254", "link-local"),  # the cloud metadata service
        ("::ffff:10.0.0.1", "private"),  # an IPv4 private address written as IPv6
        ("0.0.0.0", "private"),  # is_private covers 0.0.0.0/8 before "unspecified" is asked
    ],
)
def test_an_inside_address_is_refused_unless_the_operator_allows_private_ones(address, what):
    refusal = address_refusal(address, allow_private=False)
    assert refusal is not None and f"a {what} address" in refusal
    assert "ICEWATER_ALERT_PRIVATE_ADDRESSES=1" in refusal
    assert address_refusal(address, allow_private=True) is None


def test_a_public_address_is_allowed_and_multicast_never():
    assert address_refusal("93.184.216.34", allow_private=False) is None
    assert address_refusal("2606:2800:220:1::1", allow_private=False) is None
    assert "multicast" in address_refusal("224.0.0.1", allow_private=True)


def test_the_secret_variable_must_be_allowed_and_never_a_reserved_one():
    allowed = ["HOOKS_SIGNING_KEY"]
    assert secret_var_refusal("HOOKS_SIGNING_KEY", allowed) is None
    assert "ICEWATER_ALERT_SECRET_VARS allows: HOOKS_SIGNING_KEY" in secret_var_refusal("OTHER_KEY", allowed)
    for name in ("DATABASE_URL", "ICEWATER_SECRET_KEY", "AWS_SECRET_ACCESS_KEY", "MY_PASSWORD"):
        assert "is reserved" in secret_var_refusal(name, [*allowed, name])
    assert "not an environment variable name" in secret_var_refusal("A-B", ["A-B"])


def test_the_operators_lists_are_checked_at_start_up():
    assert operator_lists_problem(["HOOKS_SIGNING_KEY"], ["hooks.slack.com"]) is None
    assert "ICEWATER_ALERT_SECRET_VARS lists DATABASE_URL" in operator_lists_problem(["DATABASE_URL"], [])
    assert "ICEWATER_ALERT_HOSTS: 'https://x.org/' is not a host name" in operator_lists_problem([], ["https://x.org/"])


DELAYS = (30.0, 120.0, 480.0, 1800.0)


def test_the_waits_follow_the_schedule_then_stop():
    # Five tries: after the first fails, 30 s; the second, 2 min; ...; after the fifth, none.
    assert [retry_delay(n, DELAYS, None) for n in range(1, 6)] == [30.0, 120.0, 480.0, 1800.0, None]


def test_retry_after_is_honoured_when_longer_up_to_an_hour():
    assert retry_delay(1, DELAYS, 300.0) == 300.0
    assert retry_delay(1, DELAYS, 5.0) == 30.0  # never sooner than the schedule
    assert retry_delay(1, DELAYS, 86_400.0) == 3600.0
    assert retry_delay(5, DELAYS, 10.0) is None  # the last try stays the last


@pytest.mark.parametrize(("status", "retry"), [(500, True), (503, True), (408, True), (429, True), (400, False)])
def test_which_answers_are_worth_another_try(status, retry):
    assert retryable_status(status) is retry
    assert retryable_status(404) is False and retryable_status(302) is False
