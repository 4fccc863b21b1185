"""ICEWATER_SITE_URL as config/settings.py reads it: unset means no links; a scheme and a host (and port) are kept
as given, a trailing slash dropped; anything glued on (a path, a query, credentials) or no host stops the start."""

from __future__ import annotations

import pytest

from tests.config.test_settings import load_settings

pytestmark = pytest.mark.subprocess
READ = "import config.settings as s; print(repr(s.ICEWATER_SITE_URL))"


@pytest.mark.parametrize(
    ("given", "kept"),
    [
        (None, "''"),
        ("https://icewater.example.com", "'https://icewater.example.com'"),
        ("https://icewater.example.com/", "'https://icewater.example.com'"),
        ("http://127.0.0.1:8000", "'http://127.0.0.1:8000'"),
    ],
)
def test_a_scheme_and_host_are_kept(tmp_path, given, kept):
    env = {} if given is None else {"ICEWATER_SITE_URL": given}
    result = load_settings(tmp_path, code=READ, **env)
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == kept


@pytest.mark.parametrize(
    ("given", "said"),
    [
        ("icewater.example.com", "must be http(s)://host"),
        ("ftp://icewater.example.com", "must be http(s)://host"),
        ("https://", "must be http(s)://host"),
        ("https://icewater.example.com/icewater", "no path, query or credentials"),
        ("https://icewater.example.com?x=1", "no path, query or credentials"),
        ("https://me:pw@icewater.example.com", "no path, query or credentials"),
        ("https://icewater.example.com:port", "is not a URL"),
    ],
)
def test_anything_else_stops_the_start_with_one_line(tmp_path, given, said):
    result = load_settings(tmp_path, code=READ, ICEWATER_SITE_URL=given)
    assert result.returncode != 0
    assert f"ICEWATER_SITE_URL={given!r}" in result.stderr and said in result.stderr, result.stderr
