"""Helpers for the judging tests: the test key, the judge config form, running a scope in process and the worker
command (their fixtures: tests/conftest.py; judge configs and scopes: tests/factories.py)."""

from __future__ import annotations

import sys

from judging import runner
from judging.models import JudgeRun

# A key that must never show up anywhere but in the Authorization header the fake server sees. Its
# variable is on the tests' key allowlist (conftest.py; the Celery worker gets it in its environment).
KEY_ENV = "JUDGE_TEST_API_KEY"
KEY_VALUE = "sk-test-7Hq2-NEVER-STORE-THIS-a91f"

# The judge config form as the lead's page posts it (every field, the model's defaults).
CONFIG_FORM = {
    "name": "gpt-judge",
    "backend": "openai",
    "model_id": "gpt-x-2026",
    "api_key_env": "OPENAI_API_KEY",
    "base_url": "",
    "temperature": "0",
    "max_output_tokens": "1024",
    "mode": "per_output",
    "samples": "1",
    "max_concurrency": "4",
    "timeout_s": "60",
    "max_retries": "4",
    "prompt_template_version": "v1",
    "instruments": "{}",
}


def judge_in_process(scope: runner.Scope, **kwargs) -> JudgeRun:
    run = runner.create_run(scope, mode=JudgeRun.Mode.IN_PROCESS)
    runner.run_in_process(run, **kwargs)
    run.refresh_from_db()
    return run


class Sleeps:
    """Records the backoff a run asked for instead of sleeping it (pure timing, no waiting in tests)."""

    def __init__(self) -> None:
        self.calls: list[float] = []

    def __call__(self, seconds: float) -> None:
        self.calls.append(seconds)


def celery_worker_argv(name: str, *, concurrency: int, loglevel: str) -> list[str]:
    """The command of a real Celery worker for this project (tests and bench/judge_throughput.py start one)."""
    return [
        sys.executable,
        "-m",
        "celery",
        "-A",
        "config",
        "worker",
        "--loglevel",
        loglevel,
        "--concurrency",
        str(concurrency),
        "-n",
        f"{name}@%h",
        "--without-gossip",
        "--without-mingle",
    ]
