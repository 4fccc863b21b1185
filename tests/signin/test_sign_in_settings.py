"""ICEWATER_OIDC_* and ICEWATER_PASSWORD_LOGIN as config/settings.py reads them: a bad value or a missing
companion stops the start with one line (in another process, as the other settings' tests)."""

from __future__ import annotations

import json

import pytest

from tests.config.test_settings import load_settings

pytestmark = pytest.mark.subprocess

GOOD = {
    "ICEWATER_OIDC_ISSUER": "https://login.example.com/realms/acme",
    "ICEWATER_OIDC_CLIENT_ID": "icewater",
    "ICEWATER_OIDC_CLIENT_SECRET": "s3cret",
    "ICEWATER_OIDC_ROLE_MAP": "eng=refund-support:lead",
}
READ = (
    "import json, config.settings as s; print(json.dumps([s.ICEWATER_OIDC_ISSUER, s.ICEWATER_OIDC_CLIENT_ID, "
    "s.ICEWATER_OIDC_GROUPS_CLAIM, [list(vars(g).values()) for g in s.ICEWATER_OIDC_ROLE_MAP], "
    "s.ICEWATER_PASSWORD_LOGIN, s.ICEWATER_OIDC_VERIFIED_EMAIL, s.AUTHENTICATION_BACKENDS]))"
)


def read(tmp_path, **env):
    result = load_settings(tmp_path, code=READ, **env)
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout)


def test_without_an_issuer_sign_in_is_by_password_only(tmp_path):
    assert read(tmp_path) == [
        "",
        "",
        "groups",
        [],
        True,
        True,
        [
            "axes.backends.AxesStandaloneBackend",
            "django.contrib.auth.backends.ModelBackend",
            "signin.backend.OIDCBackend",
        ],
    ]


def test_a_provider_is_read_with_its_map_and_password_sign_in_can_be_turned_off(tmp_path):
    got = read(tmp_path, **GOOD, ICEWATER_OIDC_GROUPS_CLAIM="roles", ICEWATER_PASSWORD_LOGIN="0")
    assert got == [
        "https://login.example.com/realms/acme",
        "icewater",
        "roles",
        [["eng", "refund-support", "lead"]],
        False,
        True,
        # No backend checks a password any more.
        ["axes.backends.AxesStandaloneBackend", "signin.backend.OIDCBackend"],
    ]


def test_http_is_allowed_for_an_issuer_on_loopback_only(tmp_path):
    assert read(tmp_path, **{**GOOD, "ICEWATER_OIDC_ISSUER": "http://127.0.0.1:8080"})[0] == "http://127.0.0.1:8080"


@pytest.mark.parametrize(
    ("env", "message"),
    [
        ({"ICEWATER_OIDC_ISSUER": "http://login.example.com"}, "is not an issuer URL (https://..."),
        ({"ICEWATER_OIDC_ISSUER": "https://login.example.com/?tenant=1"}, "is not an issuer URL"),
        ({"ICEWATER_OIDC_ISSUER": "login.example.com"}, "is not an issuer URL"),
        ({"ICEWATER_OIDC_CLIENT_ID": ""}, "ICEWATER_OIDC_CLIENT_ID must be set when ICEWATER_OIDC_ISSUER is"),
        ({"ICEWATER_OIDC_CLIENT_SECRET": ""}, "ICEWATER_OIDC_CLIENT_SECRET must be set when ICEWATER_OIDC_ISSUER is"),
        ({"ICEWATER_OIDC_ROLE_MAP": ""}, "ICEWATER_OIDC_ROLE_MAP must map at least one GROUP=WORKSPACE:ROLE"),
        (
            {"ICEWATER_OIDC_ROLE_MAP": "eng=refund-support:boss"},
            "ICEWATER_OIDC_ROLE_MAP: entry 'eng=refund-support:boss'",
        ),
        ({"ICEWATER_OIDC_ROLE_MAP": "eng"}, "ICEWATER_OIDC_ROLE_MAP: entry 'eng' is not GROUP=WORKSPACE:ROLE"),
        ({"ICEWATER_OIDC_ISSUER": ""}, "ICEWATER_OIDC_CLIENT_ID is set but ICEWATER_OIDC_ISSUER is not"),
        ({"ICEWATER_PASSWORD_LOGIN": "maybe"}, "ICEWATER_PASSWORD_LOGIN='maybe' is not a boolean"),
        ({"ICEWATER_OIDC_VERIFIED_EMAIL": "2"}, "ICEWATER_OIDC_VERIFIED_EMAIL='2' is not a boolean"),
    ],
)
def test_a_bad_value_stops_the_start_naming_it(tmp_path, env, message):
    result = load_settings(tmp_path, **{**GOOD, **env})
    assert result.returncode != 0
    assert message in result.stderr, result.stderr


def test_password_sign_in_off_without_a_provider_stops_the_start(tmp_path):
    result = load_settings(tmp_path, ICEWATER_PASSWORD_LOGIN="0")
    assert "ICEWATER_PASSWORD_LOGIN=0 needs ICEWATER_OIDC_ISSUER: nobody could sign in" in result.stderr


def test_a_bad_role_map_is_one_line_from_manage_py_with_exit_status_2(tmp_path):
    code = (
        "import sys; sys.argv = ['manage.py', 'check']; import runpy; runpy.run_path('manage.py', run_name='__main__')"
    )
    result = load_settings(tmp_path, code=code, **{**GOOD, "ICEWATER_OIDC_ROLE_MAP": "eng=x:boss"})
    assert result.returncode == 2
    assert result.stderr.splitlines() == [
        "icewater: ICEWATER_OIDC_ROLE_MAP: entry 'eng=x:boss': role 'boss' is not one of annotator, reviewer, lead"
    ]


def test_forms_may_lead_to_the_providers_origin_only_when_there_is_one(tmp_path):
    """The logout form redirects to the provider's end_session_endpoint: form-action must allow its origin."""
    code = "import config.settings as s; print(s.CONTENT_SECURITY_POLICY['DIRECTIVES']['form-action'])"
    with_provider = load_settings(tmp_path, code=code, **GOOD)
    assert with_provider.stdout.strip() == "[\"'self'\", 'https://login.example.com']", with_provider.stderr
    assert load_settings(tmp_path, code=code).stdout.strip() == "[\"'self'\"]"
