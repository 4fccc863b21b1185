"""The settings module reads the environment and refuses bad values loudly."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


def load_settings(tmp_path, **env):
    clean = {k: v for k, v in os.environ.items() if not k.startswith(("ICEWATER_", "DATABASE_URL", "CELERY_"))}
    clean.update({"ICEWATER_DATA_DIR": str(tmp_path), **env})
    code = "import config.settings as s; print(s.DATABASES['default']['ENGINE'], s.CELERY_BROKER_URL, s.DEBUG)"
    return subprocess.run([sys.executable, "-c", code], cwd=ROOT, env=clean, capture_output=True, text=True)


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
    ],
)
def test_bad_values_fail_loudly(tmp_path, env, message):
    result = load_settings(tmp_path, **env)
    assert result.returncode != 0
    assert message in result.stderr
