"""Real processes the tests start and stop: a Celery worker on this run's queue, a redis-server of a test's own.

The fixtures that hand them to tests (`workers`, `private_redis`) are in tests/conftest.py.
"""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import time
import uuid
from pathlib import Path

import redis
from django.conf import settings

from tests.judging_helpers import KEY_ENV, KEY_VALUE, celery_worker_argv

ROOT = Path(__file__).resolve().parent.parent
WORKER_START_TIMEOUT_S = 120
# Generous ceiling for a redis-server to start or stop; never reached when it works.
REDIS_WITHIN_S = 60


def database_url() -> str:
    db = settings.DATABASES["default"]
    return f"postgres://{db['USER']}:{db['PASSWORD']}@{db['HOST']}:{db['PORT']}/{db['NAME']}"


class Worker:
    """One `celery -A config worker` process (its own process group, so a kill takes its pool too)."""

    def __init__(self, log_dir: Path, concurrency: int = 2, broker_url: str = ""):
        self.name = f"judgetest-{uuid.uuid4().hex[:8]}"
        self.log = log_dir / f"{self.name}.log"
        env = {
            **os.environ,
            "DATABASE_URL": database_url(),
            "ICEWATER_CELERY_QUEUE": settings.CELERY_TASK_DEFAULT_QUEUE,
            "CELERY_BROKER_URL": broker_url or settings.CELERY_BROKER_URL,
            KEY_ENV: KEY_VALUE,
            "ICEWATER_JUDGE_KEY_VARS": KEY_ENV,
        }
        env.pop("ICEWATER_TEST_DB_NAME", None)
        # The child has its own copy of the file's descriptor: ours is closed once it started.
        with self.log.open("wb") as log:
            self.process = subprocess.Popen(
                celery_worker_argv(self.name, concurrency=concurrency, loglevel="INFO"),
                cwd=ROOT,
                env=env,
                stdout=log,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )
        self.wait_ready()

    def wait_ready(self) -> None:
        deadline = time.monotonic() + WORKER_START_TIMEOUT_S
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise AssertionError(f"the worker exited:\n{self.log.read_text()[-3000:]}")
            if " ready." in self.log.read_text(errors="replace"):
                return
            time.sleep(0.2)
        raise AssertionError(f"the worker did not start:\n{self.log.read_text()[-3000:]}")

    def kill(self) -> None:
        """SIGKILL, parent and pool children: no warm shutdown, no acks, no cleanup."""
        os.killpg(self.process.pid, signal.SIGKILL)
        self.process.wait(timeout=30)

    def stop(self) -> None:
        if self.process.poll() is None:
            os.killpg(self.process.pid, signal.SIGTERM)
            try:
                self.process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self.kill()


class PrivateRedis:
    """A redis-server of this test's own on a free loopback port: stopping it stops nobody else's."""

    def __init__(self, directory: Path):
        with socket.socket() as probe:
            probe.bind(("127.0.0.1", 0))
            self.port = probe.getsockname()[1]
        self.directory = directory
        self.url = f"redis://127.0.0.1:{self.port}/0"
        self.process: subprocess.Popen | None = None

    def start(self) -> None:
        argv = ["redis-server", "--port", str(self.port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no"]
        self.process = subprocess.Popen(
            [*argv, "--dir", str(self.directory)], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
        )
        client = redis.Redis(port=self.port)
        deadline = time.monotonic() + REDIS_WITHIN_S
        while time.monotonic() < deadline:
            try:
                client.ping()
                return
            except redis.ConnectionError:
                time.sleep(0.05)
        raise AssertionError(f"redis-server on port {self.port} did not start")

    def stop(self) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.terminate()  # SIGTERM: it shuts down at once (nothing to save)
            self.process.wait(timeout=REDIS_WITHIN_S)
