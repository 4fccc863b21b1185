"""A bad or missing setting stops manage.py, gunicorn, the Celery worker and Celery beat with one line and exit
status 2."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

# Every test here starts another process.
pytestmark = pytest.mark.subprocess
ROOT = Path(__file__).resolve().parents[2]
BIN = Path(sys.executable).parent

MANAGE = [sys.executable, "manage.py", "check"]
# Port 0 and no control socket: should the check fail to stop it, this gunicorn touches nothing shared.
GUNICORN = [str(BIN / "gunicorn"), "config.wsgi:application", "--bind", "127.0.0.1:0", "--no-control-socket"]
CELERY = [str(BIN / "celery"), "-A", "config", "worker", "--pool", "solo", "--loglevel", "WARNING"]
BEAT = [str(BIN / "celery"), "-A", "config", "beat", "--loglevel", "WARNING"]
# Another WSGI server imports config.wsgi without gunicorn.conf.py.
WSGI_IMPORT = [sys.executable, "-c", "import config.wsgi"]

NOT_A_BOOLEAN = ({"ICEWATER_DEBUG": "maybe"}, "icewater: ICEWATER_DEBUG='maybe' is not a boolean")
NO_SECRET_KEY = ({"DATABASE_URL": "postgres://a@h/x"}, "icewater: ICEWATER_SECRET_KEY must be set when debug is off")
NO_PERIOD = ({"ICEWATER_TRACE_SWEEP_SECONDS": "0"}, "icewater: ICEWATER_TRACE_SWEEP_SECONDS=0 must be at least 1")
NOT_A_PERIOD = ({"ICEWATER_TRACE_SWEEP_SECONDS": "1m"}, "icewater: ICEWATER_TRACE_SWEEP_SECONDS='1m' is not a whole")
NOT_A_DATABASE = (
    {"DATABASE_URL": "mysql://a@h/x", "ICEWATER_SECRET_KEY": "k"},
    "icewater: DATABASE_URL must point at PostgreSQL",
)


def run(command, env, tmp_path, timeout=120):
    clean = {k: v for k, v in os.environ.items() if not k.startswith(("ICEWATER_", "DATABASE_URL", "CELERY_"))}
    clean.update({"ICEWATER_DATA_DIR": str(tmp_path), **env})
    return subprocess.run(command, cwd=ROOT, env=clean, capture_output=True, text=True, timeout=timeout)


@pytest.mark.parametrize(
    ("command", "bad"),
    [
        (MANAGE, NOT_A_BOOLEAN),
        (MANAGE, NO_SECRET_KEY),
        (MANAGE, NOT_A_DATABASE),
        (GUNICORN, NO_SECRET_KEY),
        (CELERY, NOT_A_BOOLEAN),
        (BEAT, NO_PERIOD),
        (BEAT, NOT_A_PERIOD),
        (WSGI_IMPORT, NOT_A_DATABASE),
    ],
    ids=[
        "manage-debug",
        "manage-secret",
        "manage-database",
        "gunicorn-secret",
        "celery-debug",
        "beat-zero-period",
        "beat-period-not-a-number",
        "wsgi-database",
    ],
)
def test_a_bad_setting_is_one_line_on_stderr_saying_what_to_set_and_exit_status_2(tmp_path, command, bad):
    env, message = bad
    result = run(command, env, tmp_path)
    assert result.stderr.splitlines() == [result.stderr.strip()], result.stderr
    assert result.stderr.startswith(message)
    assert result.returncode == 2
    assert result.stdout == ""


def test_the_secret_key_message_says_why_database_url_needs_one(tmp_path):
    result = run(MANAGE, NO_SECRET_KEY[0], tmp_path)
    assert "when debug is off and DATABASE_URL is set (every web server on that database needs the same key)" in (
        result.stderr
    )


def test_a_data_folder_that_cannot_be_made_is_a_setting_error_too(tmp_path):
    blocker = tmp_path / "a-file"
    blocker.write_text("")
    result = run(MANAGE, {"ICEWATER_DATA_DIR": str(blocker / "data")}, tmp_path)
    assert result.stderr.startswith("icewater: ICEWATER_DATA_DIR=") and len(result.stderr.splitlines()) == 1
    assert result.returncode == 2


def test_good_settings_still_start_manage_py(tmp_path):
    result = run(MANAGE, {}, tmp_path)
    assert result.returncode == 0, result.stderr
    assert "System check identified no issues" in result.stdout


def test_an_error_that_is_not_a_setting_keeps_its_traceback(tmp_path):
    # A settings module that does not exist is a broken install, not a value to set: not swallowed.
    result = run(MANAGE, {"DJANGO_SETTINGS_MODULE": "config.no_such_settings"}, tmp_path)
    assert result.returncode == 1
    assert "Traceback (most recent call last)" in result.stderr
    assert "ModuleNotFoundError" in result.stderr
