"""ICEWATER_ALERT_* as config/settings.py reads them: defaults that send nowhere, and a bad value stops the start
with one line (in another process, as the other settings' tests)."""

from __future__ import annotations

import json

import pytest

from tests.config.test_settings import load_settings

pytestmark = pytest.mark.subprocess
READ = (
    "import json, config.settings as s; print(json.dumps([s.ICEWATER_ALERT_HOSTS, s.ICEWATER_ALERT_PRIVATE_ADDRESSES, "
    "s.ICEWATER_ALERT_SECRET_VARS, s.ICEWATER_ALERT_TIMEOUT_SECONDS, list(s.ICEWATER_ALERT_RETRY_DELAYS)]))"
)


def test_by_default_no_host_is_allowed_and_five_tries_take_about_41_minutes(tmp_path):
    result = load_settings(tmp_path, code=READ)
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout) == [[], False, [], 5, [30.0, 120.0, 480.0, 1800.0]]


def test_the_operators_lists_are_read(tmp_path):
    env = {
        "ICEWATER_ALERT_HOSTS": "hooks.slack.com, *.example.org",
        "ICEWATER_ALERT_PRIVATE_ADDRESSES": "1",
        "ICEWATER_ALERT_SECRET_VARS": "HOOKS_SIGNING_KEY",
        "ICEWATER_ALERT_RETRY_DELAYS": "10,60",
    }
    result = load_settings(tmp_path, code=READ, **env)
    assert json.loads(result.stdout) == [
        ["hooks.slack.com", "*.example.org"],
        True,
        ["HOOKS_SIGNING_KEY"],
        5,
        [10.0, 60.0],
    ]


@pytest.mark.parametrize(
    ("env", "message"),
    [
        (
            {"ICEWATER_ALERT_SECRET_VARS": "DATABASE_URL"},
            "ICEWATER_ALERT_SECRET_VARS lists DATABASE_URL, which no alert",
        ),
        (
            {"ICEWATER_ALERT_SECRET_VARS": "A-B"},
            "ICEWATER_ALERT_SECRET_VARS: 'A-B' is not an environment variable name",
        ),
        (
            {"ICEWATER_ALERT_HOSTS": "https://hooks.slack.com/"},
            "ICEWATER_ALERT_HOSTS: 'https://hooks.slack.com/' is not",
        ),
        ({"ICEWATER_ALERT_RETRY_DELAYS": "30,soon"}, "ICEWATER_ALERT_RETRY_DELAYS='30,soon' is not a list of seconds"),
        ({"ICEWATER_ALERT_PRIVATE_ADDRESSES": "maybe"}, "ICEWATER_ALERT_PRIVATE_ADDRESSES='maybe' is not a boolean"),
    ],
)
def test_a_bad_value_stops_the_start_naming_it(tmp_path, env, message):
    result = load_settings(tmp_path, **env)
    assert result.returncode != 0
    assert message in result.stderr, result.stderr
