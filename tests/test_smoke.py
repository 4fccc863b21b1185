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
ROOT = Path(__file__).resolve().parent.parent


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


def test_make_run_serves_the_demo_and_its_worker_takes_judge_runs(tmp_path):
    """scripts/run.sh (what `make run` starts): migrate, the demo, gunicorn, and a Celery worker on the
    file-system broker that a judge run queued from the command line reaches."""
    import http.cookiejar
    import re
    from urllib.parse import urlencode

    env = {k: v for k, v in os.environ.items() if not k.startswith(("ICEWATER_", "DATABASE_URL", "CELERY_"))}
    port = free_port()
    env.update(ICEWATER_DATA_DIR=str(tmp_path), HOST="127.0.0.1", PORT=str(port))
    app = subprocess.Popen(
        ["bash", "scripts/run.sh"],
        cwd=ROOT,
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,  # gunicorn and the worker in one process group, stopped together
    )
    try:
        base = f"http://127.0.0.1:{port}"
        opener = urllib.request.build_opener(urllib.request.HTTPCookieProcessor(http.cookiejar.CookieJar()))
        deadline = time.monotonic() + 240  # migrate and load_demo come first
        page = ""
        while time.monotonic() < deadline and not page:
            assert app.poll() is None, "scripts/run.sh exited early"
            try:
                with opener.open(f"{base}/accounts/login/", timeout=2) as response:
                    page = response.read().decode()
            except OSError:
                time.sleep(0.5)
        token = re.search(r'name="csrfmiddlewaretoken" value="([^"]+)"', page).group(1)
        form = urlencode({"csrfmiddlewaretoken": token, "username": "lee", "password": "icewater-demo"}).encode()
        with opener.open(urllib.request.Request(f"{base}/accounts/login/", data=form), timeout=10) as response:
            home = response.read().decode()
        assert "lee" in home and "Log in" not in home  # the demo's lead is signed in

        # A judge run queued on the embedded broker is taken by the worker run.sh started.
        done = subprocess.run(
            [sys.executable, "manage.py", "run_judge", "--eval-set", "refund-support-demo", "--rubric",
             "refund-support@1", "--judge", "demo-instruments", "--wait", "--timeout", "120", "--poll", "0.5"],
            cwd=ROOT, env=env, capture_output=True, text=True, timeout=180,
        )  # fmt: skip
        assert done.returncode == 0, done.stdout + done.stderr
        assert "done" in done.stdout
    finally:
        stop_group(app)


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
