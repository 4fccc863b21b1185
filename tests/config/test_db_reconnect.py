"""A web worker whose database connection died (a database restart, a failover, an idle timeout) answers its
next request from a fresh connection, not with a 500.

Persistent connections (CONN_MAX_AGE) are reused across requests; after a PostgreSQL restart every gunicorn
worker's first request failed on its stale one. CONN_HEALTH_CHECKS makes Django check a reused connection at
the start of each request and reconnect when it is gone. The test runs the real gunicorn (one worker, one
thread, so the two requests share one connection) against the test database, and kills that connection on
the server side between the requests, as a restart does.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
import urllib.error
import urllib.request
from urllib.parse import quote

import pytest
from django.conf import settings
from django.db import connection

from tests.config.test_smoke import ROOT, free_port

pytestmark = [pytest.mark.postgres, pytest.mark.django_db(transaction=True)]


def database_url() -> str:
    db = connection.settings_dict
    auth = f"{quote(db['USER'])}:{quote(db['PASSWORD'])}@" if db["USER"] else ""
    return f"postgres://{auth}{db['HOST']}:{db['PORT']}/{db['NAME']}"


def get(url: str, session: str) -> int:
    request = urllib.request.Request(url, headers={"Cookie": f"{settings.SESSION_COOKIE_NAME}={session}"})
    try:
        with urllib.request.urlopen(request, timeout=30) as response:
            return response.status
    except urllib.error.HTTPError as exc:
        return exc.code


def server_backends() -> list[int]:
    """The PostgreSQL backends of the test database other than this test's own: the server's connection."""
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT pid FROM pg_stat_activity WHERE datname = current_database() AND pid <> pg_backend_pid() "
            "AND backend_type = 'client backend'"
        )
        return [row[0] for row in cursor.fetchall()]


@pytest.fixture
def gunicorn(tmp_path):
    assert connection.vendor == "postgresql"
    port = free_port()
    env = {k: v for k, v in os.environ.items() if not k.startswith(("DATABASE_URL", "ICEWATER_DB_CONN_MAX_AGE"))}
    env.update(DATABASE_URL=database_url(), ICEWATER_DB_CONN_MAX_AGE="600", ICEWATER_DATA_DIR=str(tmp_path))
    argv = [sys.executable, "-m", "gunicorn", "config.wsgi", "--bind", f"127.0.0.1:{port}", "--workers", "1"]
    server = subprocess.Popen(
        [*argv, "--threads", "1", "--worker-class", "sync", "--timeout", "60"],
        cwd=ROOT,
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )
    base = f"http://127.0.0.1:{port}"
    try:
        deadline = time.monotonic() + 120
        while True:
            assert server.poll() is None, "gunicorn exited early"
            try:
                with urllib.request.urlopen(f"{base}/healthz", timeout=2):
                    break
            except OSError:
                assert time.monotonic() < deadline, "gunicorn did not answer"
                time.sleep(0.3)
        yield base
    finally:
        os.killpg(server.pid, signal.SIGTERM)
        try:
            server.wait(timeout=30)
        except subprocess.TimeoutExpired:
            os.killpg(server.pid, signal.SIGKILL)
            server.wait(timeout=10)


@pytest.mark.subprocess
def test_a_request_after_the_database_dropped_the_workers_connection_succeeds(gunicorn, client, lead):
    client.force_login(lead)  # a session row in the database: every request reads it, and the user
    session = client.cookies[settings.SESSION_COOKIE_NAME].value
    assert get(f"{gunicorn}/", session) == 200
    [backend] = server_backends()  # the worker's persistent connection, kept for the next request
    assert get(f"{gunicorn}/", session) == 200
    assert server_backends() == [backend]  # the same connection served both: it is persistent
    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_terminate_backend(%s)", [backend])
    deadline = time.monotonic() + 10
    while backend in server_backends() and time.monotonic() < deadline:
        time.sleep(0.05)
    assert get(f"{gunicorn}/", session) == 200
    assert get(f"{gunicorn}/", session) == 200  # and the new connection is the one kept


def test_the_setting_is_on_for_a_database_url():
    assert settings.DATABASES["default"]["CONN_HEALTH_CHECKS"] is True
