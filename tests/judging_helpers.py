"""Builders for the judging tests: judge configs, run scopes, the worker command (their fixtures: tests/conftest.py)."""

from __future__ import annotations

import sys

from judging import runner
from judging.models import JudgeConfig, JudgeRun
from tests.factories import make_eval_set, make_output, make_rubric_version
from tests.fake_llm import FakeLLM

# A key that must never show up anywhere but in the Authorization header the fake server sees. Its
# variable is on the tests' key allowlist (conftest.py; the Celery worker gets it in its environment).
KEY_ENV = "JUDGE_TEST_API_KEY"
KEY_VALUE = "sk-test-7Hq2-NEVER-STORE-THIS-a91f"
RESPONSE = "I have issued a refund of $40.00. You will see it within 5 business days."

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


def make_judge(fake: FakeLLM | None = None, name: str = "judge", backend: str = "openai", **fields) -> JudgeConfig:
    defaults: dict = {"model_id": "judge-model-2026-01", "api_key_env": KEY_ENV, "timeout_s": 5.0, "max_retries": 2}
    if fake is not None:
        defaults["base_url"] = fake.openai_base_url if backend == "openai" else fake.anthropic_base_url
    if backend in ("instrument", "imported"):
        defaults = {"model_id": "", "api_key_env": ""}
    defaults.update(fields)
    return JudgeConfig.objects.create(name=name, backend=backend, **defaults)


def make_scope(
    judge: JudgeConfig,
    *,
    responses: list[str] | None = None,
    rubric=None,
    eval_set=None,
    agent_version: str = "default",
) -> runner.Scope:
    eval_set = eval_set or make_eval_set()
    rubric = rubric or make_rubric_version()
    for i, response in enumerate(responses or [RESPONSE]):
        make_output(eval_set, case_id=f"case-{i + 1:03d}", response=response, agent_version=agent_version)
    return runner.Scope(eval_set, rubric, judge, "")


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
