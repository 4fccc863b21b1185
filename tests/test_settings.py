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
ROOT = Path(__file__).resolve().parent.parent


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
    assert result.stdout.split() == ["django.db.backends.sqlite3", "filesystem://", "True"]


def test_database_url_switches_to_postgres_and_broker_url_to_redis(tmp_path):
    result = load_settings(
        tmp_path,
        DATABASE_URL="postgres://u:p@127.0.0.1:5432/x",
        CELERY_BROKER_URL="redis://127.0.0.1:6379/0",
        ICEWATER_SECRET_KEY="k",
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.split() == ["django.db.backends.postgresql", "redis://127.0.0.1:6379/0", "False"]


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
