"""Judge runs on a real Celery worker (a `celery -A config worker` process) over Redis, against the fake server.

The worker reads the test database (DATABASE_URL points at it) and this run's queue, so the
data must be committed: these tests use transactional_db.
"""

from __future__ import annotations

import io
import time
from pathlib import Path

import pytest
from django.core.management import call_command
from django.db.models import Count

from judging import runner
from judging.models import JudgeConfig, JudgeRun, RunItem, Verdict
from tests.factories import RESPONSE, make_llm_judge, make_rubric_version, make_scope
from tests.judging_helpers import KEY_VALUE

pytestmark = [pytest.mark.celery, pytest.mark.django_db(transaction=True)]
ROOT = Path(__file__).resolve().parents[2]
WORKER_START_TIMEOUT_S = 120
RUN_TIMEOUT_S = 120


def wait_for(run: JudgeRun, timeout: float = RUN_TIMEOUT_S) -> JudgeRun:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        run.refresh_from_db()
        if not run.is_active:
            return run
        time.sleep(0.2)
    raise AssertionError(f"run {run.pk} still {run.status} after {timeout} s")


def test_a_run_on_a_worker_is_bounded_cached_and_followed_by_run_judge(fake_llm, judge_key, workers):
    fake_llm.latency_s = 0.1
    judge = make_llm_judge(fake_llm, max_concurrency=3)
    scope = make_scope(
        judge,
        responses=[f"Reply {i}: refund of $40.00." for i in range(20)]
        + [f"{RESPONSE} [[fake:all=FAIL]]", f"{RESPONSE} [[fake:malformed]]"],
        rubric=make_rubric_version(name="refund", version="1"),
    )
    workers(concurrency=2)
    run = wait_for(runner.start_run(scope, check_api_key=False))
    assert run.status == "done", run.error
    assert Verdict.objects.filter(run=run).count() == 44
    outcomes = dict(Verdict.objects.filter(run=run).values_list("outcome").annotate(n=Count("pk")))
    assert outcomes == {"PASS": 40, "FAIL": 2, "ERROR": 2}
    assert fake_llm.calls == 22
    assert fake_llm.max_in_flight <= 3  # two lanes in two processes, one bound across both
    assert any(KEY_VALUE in r.headers.get("authorization", "") for r in fake_llm.requests)
    # The same data again, followed to its end by the command: every verdict from the cache.
    fake_llm.reset()
    out = io.StringIO()
    call_command(
        "run_judge",
        "--eval-set",
        scope.eval_set.name,
        "--rubric",
        "refund@1",
        "--judge",
        judge.name,
        "--wait",
        "--poll",
        "0.2",
        "--timeout",
        str(RUN_TIMEOUT_S),
        stdout=out,
    )
    assert "44/44 verdicts" in out.getvalue() and "cache hits 44" in out.getvalue()
    assert fake_llm.calls == 0


def test_a_worker_killed_mid_run_loses_nothing(fake_llm, workers):
    fake_llm.latency_s = 0.3
    judge = make_llm_judge(fake_llm, max_concurrency=2, timeout_s=2.0)
    scope = make_scope(judge, responses=[f"Reply number {i}." for i in range(40)])
    first = workers(concurrency=2)
    run = runner.start_run(scope, check_api_key=False)
    deadline = time.monotonic() + RUN_TIMEOUT_S
    while RunItem.objects.filter(run=run, state="done").count() < 6 and time.monotonic() < deadline:
        time.sleep(0.05)
    first.kill()
    held = set(RunItem.objects.filter(run=run, state="claimed").values_list("pk", flat=True))
    done_at_kill = RunItem.objects.filter(run=run, state="done").count()
    run.refresh_from_db()
    assert run.status == "running" and 6 <= done_at_kill < 40 and held  # killed mid-run, holding work
    workers(concurrency=2)  # its worker_ready hook gives the run fresh lanes
    run = wait_for(run)
    assert run.status == "done"
    # Every verdict exactly once: the unique constraint forbids more, the count shows nothing is missing.
    per_key = Verdict.objects.filter(run=run).values("output", "criterion", "sample").annotate(n=Count("pk"))
    assert len(per_key) == 80 and {row["n"] for row in per_key} == {1}
    assert not RunItem.objects.filter(run=run).exclude(state="done").exists()
    # What the dead worker held was taken again once its leases ran out.
    assert set(RunItem.objects.filter(pk__in=held, claims__gte=2).values_list("pk", flat=True)) == held
    assert fake_llm.calls >= 40


@pytest.mark.parametrize(
    "breakage,reason",
    [
        # Written after the run was checked and queued, past every rule (update() validates nothing).
        ({"instruments": {"correct_amount": "max_length"}}, "a lane stopped on an unexpected error (TypeError: "),
        ({"base_url": "{fake}\r\nX-Injected: 1"}, "base_url must not contain whitespace or control characters"),
    ],
)
def test_a_lane_that_breaks_on_a_worker_fails_the_run_with_the_reason(fake_llm, workers, breakage, reason):
    judge = make_llm_judge(fake_llm, instruments={"correct_amount": {"kind": "max_length", "max_chars": 500}})
    scope = make_scope(judge, responses=["$40 back.", "Refunded $40."])
    run = runner.start_run(scope, check_api_key=False)
    field, value = next(iter(breakage.items()))
    value = value.format(fake=fake_llm.openai_base_url) if isinstance(value, str) else value
    JudgeConfig.objects.filter(pk=judge.pk).update(**{field: value})
    workers(concurrency=2)
    run = wait_for(run)  # the old code: the lanes crashed and the run stayed "running" (this timed out)
    assert run.status == "failed" and reason in run.error
    assert not Verdict.objects.filter(run=run).exists() and fake_llm.calls == 0
    assert RunItem.objects.filter(run=run, state="pending").count() == 2


def test_a_redis_restart_mid_run_on_a_worker_leaves_no_error_verdict(fake_llm, workers, private_redis):
    """The worker's broker and limiter are one private Redis, stopped mid-run and started again."""
    fake_llm.latency_s = 0.2
    judge = make_llm_judge(fake_llm, max_concurrency=2)
    scope = make_scope(judge, responses=[f"Reply {i}: a refund of $40.00." for i in range(30)])
    # Planned, not queued here: the worker's start-up hook (resume_runs) queues its lanes on its own broker.
    run = runner.create_run(scope, mode=JudgeRun.Mode.CELERY, check_api_key=False)
    worker = workers(concurrency=2, broker_url=private_redis.url)
    deadline = time.monotonic() + RUN_TIMEOUT_S
    while RunItem.objects.filter(run=run, state="done").count() < 4 and time.monotonic() < deadline:
        time.sleep(0.05)
    private_redis.stop()
    deadline = time.monotonic() + 10
    while "Redis is unreachable" not in worker.log.read_text(errors="replace") and time.monotonic() < deadline:
        time.sleep(0.05)
    private_redis.start()
    run = wait_for(run)
    outcomes = list(Verdict.objects.filter(run=run).values_list("outcome", "error_reason"))
    assert [o for o in outcomes if o[0] == "ERROR"] == []  # the old code: ERROR, internal ... ConnectionError
    assert run.status == "done" and len(outcomes) == 60
    assert "Redis is unreachable" in worker.log.read_text(errors="replace")  # it really came mid-run
