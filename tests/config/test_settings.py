"""The settings module reads the environment and refuses bad values loudly."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

# Every test here starts another process.
pytestmark = pytest.mark.subprocess
ROOT = Path(__file__).resolve().parents[2]


def load_settings(tmp_path, code=None, **env):
    clean = {k: v for k, v in os.environ.items() if not k.startswith(("ICEWATER_", "DATABASE_URL", "CELERY_"))}
    clean.update({"ICEWATER_DATA_DIR": str(tmp_path), **env})
    code = code or "import config.settings as s; print(s.DATABASES['default']['ENGINE'], s.CELERY_BROKER_URL, s.DEBUG)"
    return subprocess.run([sys.executable, "-c", code], cwd=ROOT, env=clean, capture_output=True, text=True)


def sqlite_options(tmp_path, **env) -> dict:
    code = "import json, config.settings as s; print(json.dumps(s.DATABASES['default'].get('OPTIONS', {})))"
    result = load_settings(tmp_path, code=code, **env)
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout)


def test_no_environment_means_sqlite_and_a_serverless_broker(tmp_path):
    result = load_settings(tmp_path)
    assert result.returncode == 0, result.stderr
    # Debug off: `make run` may be reached from other machines (issue 41 item 5).
    assert result.stdout.split() == ["django.db.backends.sqlite3", "filesystem://", "False"]


def test_database_url_switches_to_postgres_and_broker_url_to_redis(tmp_path):
    result = load_settings(
        tmp_path,
        DATABASE_URL="postgres://u:p@127.0.0.1:5432/x",
        CELERY_BROKER_URL="redis://127.0.0.1:6379/0",
        ICEWATER_SECRET_KEY="k",
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.split() == ["config.postgresql", "redis://127.0.0.1:6379/0", "False"]


@pytest.mark.parametrize(
    ("env", "message"),
    [
        ({"ICEWATER_DEBUG": "maybe"}, "ICEWATER_DEBUG='maybe' is not a boolean"),
        (
            {"ICEWATER_DB_CONN_MAX_AGE": "soon", "DATABASE_URL": "postgres://a@h/x", "ICEWATER_SECRET_KEY": "k"},
            "is not a whole number",
        ),
        ({"DATABASE_URL": "mysql://a@h/x", "ICEWATER_SECRET_KEY": "k"}, "must point at PostgreSQL"),
        ({"CELERY_BROKER_URL": "amqp://h//"}, "CELERY_BROKER_URL must be a redis:// URL"),
        ({"DATABASE_URL": "postgres://a@h/x"}, "ICEWATER_SECRET_KEY must be set"),
        ({"ICEWATER_TRUSTED_PROXIES": "one"}, "ICEWATER_TRUSTED_PROXIES='one' is not a whole number"),
        ({"ICEWATER_TRUSTED_PROXIES": "-1"}, "ICEWATER_TRUSTED_PROXIES=-1 must be at least 0"),
    ],
)
def test_bad_values_fail_loudly(tmp_path, env, message):
    result = load_settings(tmp_path, **env)
    assert result.returncode != 0
    assert message in result.stderr


def debug_of(tmp_path, value: str | None) -> str:
    env = {} if value is None else {"ICEWATER_DEBUG": value}
    result = load_settings(tmp_path, code="import config.settings as s; print(s.DEBUG)", **env)
    return result.stdout.strip() if result.returncode == 0 else result.stderr.strip()


def test_debug_is_on_only_when_icewater_debug_asks_for_it_and_anything_else_stops_the_start(tmp_path):
    # The embedded default, as `make run` starts it: before issue 41 an unset ICEWATER_DEBUG meant on.
    asked = {value: debug_of(tmp_path, value) for value in [None, "", "0", "off", "1", "true", "ON", " yes ", "2"]}
    assert asked == {
        None: "False",
        "": "False",
        "0": "False",
        "off": "False",
        "1": "True",
        "true": "True",
        "ON": "True",
        " yes ": "True",
        "2": "icewater: ICEWATER_DEBUG='2' is not a boolean (use 1/0, true/false, yes/no, on/off)",  # one line
    }


KEY_CODE = "import config.settings as s; print(s.DEBUG, s.SECRET_KEY)"


def test_the_embedded_default_runs_with_debug_off_on_a_key_made_once_into_the_data_folder(tmp_path):
    first = load_settings(tmp_path, code=KEY_CODE)
    assert first.returncode == 0, first.stderr
    debug, key = first.stdout.split()
    assert debug == "False"
    kept = tmp_path / "secret_key"
    assert kept.read_text() == key and len(key) == 67  # secrets.token_urlsafe(50): 50 bytes, 67 characters
    assert kept.stat().st_mode & 0o777 == 0o600
    again = load_settings(tmp_path, code=KEY_CODE)
    assert again.stdout.split() == ["False", key]  # the next start signs with the same key
    assert sorted(p.name for p in tmp_path.iterdir() if "secret" in p.name) == ["secret_key"]  # no draft left


def test_icewater_secret_key_wins_over_the_kept_one_and_makes_no_file(tmp_path):
    result = load_settings(tmp_path, code=KEY_CODE, ICEWATER_SECRET_KEY="the-operators-own-key")
    assert result.stdout.split() == ["False", "the-operators-own-key"]
    assert not (tmp_path / "secret_key").exists()


def test_an_empty_kept_key_stops_the_start_with_what_to_do(tmp_path):
    (tmp_path / "secret_key").write_text("")
    result = load_settings(tmp_path, code=KEY_CODE)
    assert result.returncode != 0
    assert "secret key file" in result.stderr and "is empty: remove it and a new key is made" in result.stderr


# What every SQLite database needs when the web workers and the Celery worker write to one file
# (config/settings.py SQLITE_OPTIONS says why each one).
SHARED_FILE_OPTIONS = {"timeout": 20, "transaction_mode": "IMMEDIATE", "init_command": "PRAGMA journal_mode=WAL"}


def test_the_embedded_sqlite_database_waits_for_the_lock_takes_it_at_begin_and_uses_wal(tmp_path):
    assert sqlite_options(tmp_path) == SHARED_FILE_OPTIONS


def test_a_sqlite_database_named_by_database_url_gets_the_same_options(tmp_path):
    named = sqlite_options(tmp_path, DATABASE_URL=f"sqlite:///{tmp_path}/x.sqlite3", ICEWATER_SECRET_KEY="k")
    assert named == SHARED_FILE_OPTIONS


def test_an_option_written_in_the_sqlite_url_overrides_only_itself(tmp_path):
    url = f"sqlite:///{tmp_path}/x.sqlite3?timeout=60"
    assert sqlite_options(tmp_path, DATABASE_URL=url, ICEWATER_SECRET_KEY="k") == {
        "timeout": 60,
        "transaction_mode": "IMMEDIATE",
        "init_command": "PRAGMA journal_mode=WAL",
    }


def test_a_postgres_database_gets_no_sqlite_options(tmp_path):
    options = sqlite_options(tmp_path, DATABASE_URL="postgres://u:p@127.0.0.1:5432/x", ICEWATER_SECRET_KEY="k")
    assert "transaction_mode" not in options and "init_command" not in options
