"""Real processes the tests start and stop: a Celery worker on this run's queue, Celery beat, a redis-server of a
test's own, the app on gunicorn; and threads that race each other as two processes would.

The fixtures that hand them to tests (`workers`, `beats`, `private_redis`, `gunicorn`) are in tests/conftest.py.
"""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import threading
import time
import uuid
from pathlib import Path

import redis
import requests
from django.conf import settings
from django.db import connection
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceResponse

from tests.judging_helpers import KEY_ENV, KEY_VALUE, celery_worker_argv
from tests.otel_helpers import PROTOBUF, URL, export

ROOT = Path(__file__).resolve().parent.parent
WORKER_START_TIMEOUT_S = 120
# Generous ceilings for a redis-server or gunicorn to start or stop; never reached when it works.
REDIS_WITHIN_S = 60
GUNICORN_WITHIN_S = 90
SWEEP_SENT = "Sending due task finish-traces"  # what beat logs (at INFO) for each run of the trace sweep it sends


def database_url() -> str:
    db = settings.DATABASES["default"]
    return f"postgres://{db['USER']}:{db['PASSWORD']}@{db['HOST']}:{db['PORT']}/{db['NAME']}"


class CeleryProcess:
    """One `celery -A config ...` process on the test database and this run's queue, logging to `log`, in its own
    process group (so a kill takes a worker's pool too)."""

    def __init__(self, log: Path, argv: list[str], broker_url: str, extra_env: dict[str, str]):
        self.log = log
        env = {
            **os.environ,
            "DATABASE_URL": database_url(),
            "ICEWATER_CELERY_QUEUE": settings.CELERY_TASK_DEFAULT_QUEUE,
            "CELERY_BROKER_URL": broker_url or settings.CELERY_BROKER_URL,
            **extra_env,
        }
        env.pop("ICEWATER_TEST_DB_NAME", None)
        # The child has its own copy of the file's descriptor: ours is closed once it started.
        with self.log.open("wb") as out:
            self.process = subprocess.Popen(
                argv, cwd=ROOT, env=env, stdout=out, stderr=subprocess.STDOUT, start_new_session=True
            )

    def wait_for(self, seen, what: str) -> None:
        """Until `seen(log text)` is true; fails if the process exits first or WORKER_START_TIMEOUT_S passes."""
        deadline = time.monotonic() + WORKER_START_TIMEOUT_S
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise AssertionError(f"{what}: the process exited:\n{self.log.read_text()[-3000:]}")
            if seen(self.log.read_text(errors="replace")):
                return
            time.sleep(0.2)
        raise AssertionError(f"{what}: not within {WORKER_START_TIMEOUT_S} s:\n{self.log.read_text()[-3000:]}")

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


class Worker(CeleryProcess):
    """One `celery -A config worker` process, started and ready."""

    def __init__(self, log_dir: Path, concurrency: int = 2, broker_url: str = ""):
        self.name = f"judgetest-{uuid.uuid4().hex[:8]}"
        argv = celery_worker_argv(self.name, concurrency=concurrency, loglevel="INFO")
        super().__init__(
            log_dir / f"{self.name}.log", argv, broker_url, {KEY_ENV: KEY_VALUE, "ICEWATER_JUDGE_KEY_VARS": KEY_ENV}
        )
        self.wait_ready()

    def wait_ready(self) -> None:
        self.wait_for(lambda log: " ready." in log, "the worker's start")


class Beat(CeleryProcess):
    """One `celery -A config beat` process sending the periodic jobs every `period_s` seconds, with the schedule file
    it is given (a beat started again on the same file reads what the last one wrote); started and sending. Its kill
    leaves the schedule file as it last wrote it."""

    def __init__(self, log_dir: Path, broker_url: str, schedule: Path, period_s: int):
        argv = [sys.executable, "-m", "celery", "-A", "config", "beat", "--loglevel", "INFO", "-s", str(schedule)]
        log = log_dir / f"beat-{uuid.uuid4().hex[:8]}.log"
        super().__init__(log, argv, broker_url, {"ICEWATER_TRACE_SWEEP_SECONDS": str(period_s)})
        self.wait_sent(1)

    def sent(self) -> int:
        """How many runs of the trace sweep it has sent (or tried to: one sent while the broker is down fails)."""
        return self.log.read_text(errors="replace").count(SWEEP_SENT)

    def wait_sent(self, n: int) -> None:
        self.wait_for(lambda log: log.count(SWEEP_SENT) >= n, f"beat's {n} sends")


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


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


class Gunicorn:
    """The app on gunicorn (one sync worker), on the test database, with the broker it is given."""

    def __init__(self, log_dir, broker_url: str) -> None:
        self.port = free_port()
        env = {
            **os.environ,
            "DATABASE_URL": database_url(),
            "CELERY_BROKER_URL": broker_url,
            "ICEWATER_CELERY_QUEUE": settings.CELERY_TASK_DEFAULT_QUEUE,
            "ICEWATER_OTLP_QUIET_SECONDS": "1",
        }
        env.pop("ICEWATER_TEST_DB_NAME", None)
        self.log = log_dir / "gunicorn.log"
        with self.log.open("wb") as log:
            self.process = subprocess.Popen(
                [sys.executable, "-m", "gunicorn", "config.wsgi:application", "--bind", f"127.0.0.1:{self.port}",
                 "--workers", "1", "--timeout", "60"],
                cwd=ROOT, env=env, stdout=log, stderr=subprocess.STDOUT,
            )  # fmt: skip
        deadline = time.monotonic() + GUNICORN_WITHIN_S
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise AssertionError(f"gunicorn exited:\n{self.log.read_text()[-3000:]}")
            try:
                with socket.create_connection(("127.0.0.1", self.port), timeout=0.2):
                    return
            except OSError:
                time.sleep(0.1)
        raise AssertionError("gunicorn did not start")

    def export(self, token: str, spans: list) -> tuple[int, ExportTraceServiceResponse]:
        # A new connection each time and the response read in full: nothing is left open when the test ends.
        with requests.Session() as session:
            answer = session.post(
                f"http://127.0.0.1:{self.port}{URL}",
                data=export(spans).SerializeToString(),
                headers={"Content-Type": PROTOBUF, "Authorization": f"Bearer {token}", "Connection": "close"},
                timeout=60,
            )
        reply = ExportTraceServiceResponse()
        if answer.status_code == 200:
            reply.ParseFromString(answer.content)
        return answer.status_code, reply

    def stop(self) -> None:
        self.process.terminate()
        self.process.wait(timeout=30)


def race(*finishers) -> list:
    """Run the finishers at the same moment, each in a thread with its own database connection (Django's are
    per thread), as two processes would; their results, or the exception each raised."""
    start = threading.Barrier(len(finishers))
    results: list = [None] * len(finishers)

    def run(i: int) -> None:
        try:
            start.wait()
            results[i] = finishers[i]()
        except Exception as exc:  # noqa: BLE001 - returned, for the test to assert on
            results[i] = exc
        finally:
            connection.close()

    threads = [threading.Thread(target=run, args=(i,)) for i in range(len(finishers))]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=300)
    return results
