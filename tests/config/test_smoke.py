"""The embedded default (SQLite, no broker server) starts from nothing and serves the home page."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest

# Every test here starts another process.
pytestmark = pytest.mark.subprocess
ROOT = Path(__file__).resolve().parents[2]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_embedded_default_serves_the_home_page(tmp_path):
    env = {k: v for k, v in os.environ.items() if not k.startswith(("ICEWATER_", "DATABASE_URL", "CELERY_"))}
    env["ICEWATER_DATA_DIR"] = str(tmp_path)
    subprocess.run(
        [sys.executable, "manage.py", "migrate", "--noinput"], cwd=ROOT, env=env, check=True, capture_output=True
    )
    assert (tmp_path / "icewater.sqlite3").exists()
    port = free_port()
    server = subprocess.Popen(
        [sys.executable, "manage.py", "runserver", f"127.0.0.1:{port}", "--noreload"],
        cwd=ROOT,
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        body = ""
        for _ in range(100):
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{port}/", timeout=2) as response:
                    body = response.read().decode()
                    final_url = response.geturl()
                break
            except OSError:
                time.sleep(0.1)
        # The home page asks an anonymous visitor to log in.
        assert "/accounts/login/" in final_url
        assert "Log in" in body and "Icewater" in body
    finally:
        server.terminate()
        server.wait(timeout=10)


def test_embedded_default_runs_the_demo_and_a_model_judge_on_sqlite(tmp_path):
    """The portable (non-PostgreSQL) code paths of a judge run: claim, verdict insert, done marks, cache."""
    from tests.fake_llm import FakeLLM

    env = {k: v for k, v in os.environ.items() if not k.startswith(("ICEWATER_", "DATABASE_URL", "CELERY_"))}
    env.update(ICEWATER_DATA_DIR=str(tmp_path), SMOKE_JUDGE_KEY="sk-smoke", ICEWATER_JUDGE_KEY_VARS="SMOKE_JUDGE_KEY")
    env.update(ICEWATER_WORKSPACE="refund-support")  # the demo has two workspaces: the commands below work in this one

    def manage(*args: str) -> subprocess.CompletedProcess:
        return subprocess.run(
            [sys.executable, "manage.py", *args], cwd=ROOT, env=env, capture_output=True, text=True, timeout=300
        )

    assert manage("migrate", "--noinput").returncode == 0
    demo = manage("load_demo")  # runs the demo's instrument judge in process, and a probe run of it
    assert demo.returncode == 0, demo.stderr
    report = manage(
        "calibration_report", "--eval-set", "refund-support-demo", "--rubric", "refund-support@1", "--judge",
        "demo-instruments", "--format", "json",
    )  # fmt: skip
    probes = json.loads(report.stdout)["probes"]
    # The demo's probe run differs by criterion: the planted amount caught, padding slips past the word count.
    assert {c["criterion"]: c["clean"] for c in probes["criteria"]} == {
        "correct_amount": True,
        "grounded": True,
        "within_policy": True,
        "concise": False,
    }
    assert [w["code"] for w in probes["criteria"][-1]["warnings"]] == ["blind_to_padding"]
    with FakeLLM() as fake:
        judge = tmp_path / "judge.json"
        judge.write_text(
            '{"name": "smoke-llm", "backend": "openai", "model_id": "smoke-model", "api_key_env": "SMOKE_JUDGE_KEY", '
            f'"base_url": "{fake.openai_base_url}", "max_concurrency": 4, "timeout_s": 10}}'
        )
        assert manage("add_judge", str(judge)).returncode == 0
        args = (
            "run_judge",
            "--eval-set",
            "refund-support-demo",
            "--rubric",
            "refund-support@1",
            "--judge",
            "smoke-llm",
        )
        first = manage(*args, "--in-process")
        assert first.returncode == 0, first.stdout + first.stderr
        calls = fake.calls
        again = manage(*args, "--in-process")
        assert again.returncode == 0, again.stdout + again.stderr
        assert fake.calls == calls  # the unchanged re-run came from the cache
    assert calls == 360  # one call per output (per-output mode) for the demo's 360 outputs

    def export(judge: str) -> list[dict]:
        done = manage(
            "export_data", "--eval-set", "refund-support-demo", "--rubric", "refund-support@1", "--judge", judge,
            "--what", "verdicts",
        )  # fmt: skip
        assert done.returncode == 0, done.stderr
        return [json.loads(line) for line in done.stdout.splitlines() if line.strip()]

    # The current verdicts are the re-run's: four criteria for each of the 360 outputs, all from the cache
    # (the fake judge says PASS to everything).
    llm = export("smoke-llm")
    assert len(llm) == 360 * 4 and {v["outcome"] for v in llm} == {"PASS"} and all(v["cache_hit"] for v in llm)
    instruments = export("demo-instruments")
    assert len(instruments) == 360 * 4 and {v["outcome"] for v in instruments} == {"PASS", "FAIL", "NOT_APPLICABLE"}


def make_run_env(tmp_path: Path, port: int) -> dict[str, str]:
    """What `make run` sees on a machine with no Icewater settings: no ICEWATER_DEBUG, no key, no database."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("ICEWATER_", "DATABASE_URL", "CELERY_"))}
    env.update(ICEWATER_DATA_DIR=str(tmp_path), HOST="127.0.0.1", PORT=str(port))
    return env


def start_make_run(env: dict[str, str], log: Path) -> subprocess.Popen:
    with log.open("w") as out:
        return subprocess.Popen(
            ["bash", "scripts/run.sh"],
            cwd=ROOT,
            env=env,
            stdout=out,
            stderr=subprocess.STDOUT,
            start_new_session=True,  # gunicorn and the worker in one process group, stopped together
        )


def wait_for_login_page(app: subprocess.Popen, opener, base: str) -> str:
    deadline = time.monotonic() + 240  # migrate and load_demo come first
    while time.monotonic() < deadline:
        assert app.poll() is None, "scripts/run.sh exited early"
        try:
            with opener.open(f"{base}/accounts/login/", timeout=2) as response:
                return response.read().decode()
        except OSError:
            time.sleep(0.5)
    raise AssertionError("scripts/run.sh did not serve the login page")


def fetch(opener, url: str | urllib.request.Request) -> tuple[int, str, bytes]:
    """Status, Content-Type and body, an error status included (urllib raises on those)."""
    import urllib.error

    try:
        with opener.open(url, timeout=10) as response:
            return response.status, response.headers["Content-Type"], response.read()
    except urllib.error.HTTPError as error:
        return error.code, error.headers["Content-Type"], error.read()


def sweeps_run(database: Path) -> int:
    """The trace sweeps the worker has run, read from the embedded SQLite database as another process may."""
    import sqlite3

    with sqlite3.connect(database, timeout=20) as db:
        query = "select count(*) from periodic_periodicrun where job = 'finish-traces' and finished_at is not null"
        return db.execute(query).fetchone()[0]


def test_make_run_serves_the_demo_safely_to_share_and_its_worker_takes_judge_runs(tmp_path):
    """scripts/run.sh (what `make run` starts): migrate, the demo, gunicorn, a Celery worker on the file-system
    broker that a judge run queued from the command line reaches, and Celery beat whose sweep the worker runs.
    One start of it serves every check here: the demo takes most of a minute to load.

    Safe to share (issue 41 item 5): `make run HOST=0.0.0.0` served Django's debug pages to the network (every
    URL pattern on a wrong address, a traceback with local variables on an error); now debug is off, the
    secret key is kept in the data folder, static files are still served and the login page names the demo's
    public logins."""
    import http.cookiejar
    import re
    from urllib.parse import urlencode

    port = free_port()
    env = make_run_env(tmp_path, port)
    base = f"http://127.0.0.1:{port}"
    opener = urllib.request.build_opener(urllib.request.HTTPCookieProcessor(http.cookiejar.CookieJar()))
    app = start_make_run(env, tmp_path / "run.log")
    try:
        page = wait_for_login_page(app, opener, base)
        # The demo's accounts, named with their public password, and how to take them back.
        assert "Demo accounts with a public password" in page and "<code>icewater-demo</code>" in page
        assert "<strong>lee</strong> (a lead, with the admin)" in page and "manage.py changepassword NAME" in page

        status, _, body = fetch(opener, f"{base}/no-such-page/")
        assert status == 404
        assert "There is nothing at this address, or it is not yours to see." in body.decode()  # templates/404.html
        assert "URLconf" not in body.decode() and "URL patterns" not in body.decode() and "api/" not in body.decode()

        # Static files are still served with debug off (WhiteNoise), exactly as they are in the checkout.
        for path, kind in [("css/icewater.css", "text/css"), ("js/icewater.js", "text/javascript")]:
            assert f'"/static/{path}"' in page
            status, content_type, served = fetch(opener, f"{base}/static/{path}")
            assert (status, content_type.split(";")[0]) == (200, kind)
            assert served == (ROOT / "static" / path).read_bytes()

        token = re.search(r'name="csrfmiddlewaretoken" value="([^"]+)"', page).group(1)
        form = urlencode({"csrfmiddlewaretoken": token, "username": "lee", "password": "icewater-demo"}).encode()
        status, _, home = fetch(opener, urllib.request.Request(f"{base}/accounts/login/", data=form))
        # Signed in over plain HTTP: the embedded default's cookies are not secure-only.
        assert status == 200 and "lee" in home.decode() and "Log in" not in home.decode()

        # A judge run queued on the embedded broker is taken by the worker run.sh started.
        done = subprocess.run(
            [sys.executable, "manage.py", "run_judge", "--workspace", "refund-support", "--eval-set",
             "refund-support-demo", "--rubric", "refund-support@1", "--judge", "demo-instruments", "--wait",
             "--timeout", "120", "--poll", "0.5"],
            cwd=ROOT, env=env, capture_output=True, text=True, timeout=180,
        )  # fmt: skip
        assert done.returncode == 0, done.stdout + done.stderr
        assert "done" in done.stdout

        # Celery beat runs too: its first trace sweep, sent at its start, was run by the worker.
        deadline = time.monotonic() + 120
        while not sweeps_run(tmp_path / "icewater.sqlite3") and time.monotonic() < deadline:
            time.sleep(0.5)
        assert sweeps_run(tmp_path / "icewater.sqlite3"), (tmp_path / "beat.log").read_text()
    finally:
        stop_group(app)

    kept = tmp_path / "secret_key"
    key = kept.read_text()
    assert len(key) == 67 and kept.stat().st_mode & 0o777 == 0o600  # secrets.token_urlsafe(50), owner only

    app = start_make_run(env, tmp_path / "run-again.log")
    try:
        wait_for_login_page(app, opener, base)
        # A session signed before the restart still holds: the second start signed with the kept key (a new key
        # would have failed the session's hash and sent lee to the login page).
        status, _, home = fetch(opener, f"{base}/")
        assert status == 200 and "lee" in home.decode() and "Log in" not in home.decode()
    finally:
        stop_group(app)
    assert kept.read_text() == key
    # Never printed: not by run.sh, migrate, load_demo, gunicorn or the worker.
    for log in ["run.log", "run-again.log", "worker.log", "beat.log"]:
        assert key not in (tmp_path / log).read_text()


def test_an_unexpected_error_on_the_embedded_server_shows_the_sites_500_page_and_logs_the_traceback(tmp_path):
    # A real failure: gunicorn started as run.sh starts it, on a data folder nobody migrated, and a browser that
    # still holds a session cookie. Looking the session up fails (no table).
    env = make_run_env(tmp_path, 0)
    port = free_port()
    log = tmp_path / "gunicorn.log"
    with log.open("w") as out:
        server = subprocess.Popen(
            [str(Path(sys.executable).parent / "gunicorn"), "config.wsgi:application", "--bind", f"127.0.0.1:{port}",
             "--workers", "1", "--no-control-socket", "--error-logfile", "-", "--log-level", "warning"],
            cwd=ROOT, env=env, stdout=out, stderr=subprocess.STDOUT,
        )  # fmt: skip
    try:
        opener = urllib.request.build_opener()
        opener.addheaders = [("Cookie", "sessionid=from-an-earlier-visit")]
        status = 0
        deadline = time.monotonic() + 60
        while not status and time.monotonic() < deadline:
            assert server.poll() is None, log.read_text()
            try:
                status, _, body = fetch(opener, f"http://127.0.0.1:{port}/")
            except OSError:
                time.sleep(0.2)
        page = body.decode()
        assert status == 500
        assert "Something went wrong" in page and 'href="/static/css/icewater.css"' in page  # templates/500.html
        assert "Traceback" not in page and "no such table" not in page and "OperationalError" not in page
    finally:
        server.terminate()
        server.wait(timeout=10)
    assert "Traceback" in log.read_text() and "no such table: django_session" in log.read_text()


def stop_group(process: subprocess.Popen) -> None:
    """SIGTERM the process group and wait until every member (gunicorn, the worker) has gone."""
    import signal

    os.killpg(process.pid, signal.SIGTERM)
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        process.poll()
        try:
            os.killpg(process.pid, 0)
        except ProcessLookupError:
            return
        time.sleep(0.2)
    os.killpg(process.pid, signal.SIGKILL)
    process.wait(timeout=10)
