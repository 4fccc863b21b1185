"""The embedded default (SQLite, no broker server) starts from nothing and serves the home page."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

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
