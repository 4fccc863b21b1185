"""An outage of our own infrastructure is not the judge's answer, and a lane that breaks fails its run.

Redis really goes down here: a private redis-server on a free loopback port (the `private_redis` fixture),
never the shared one, is stopped mid-run and started again. The lane waits for it (bounded, with backoff);
no verdict ever says ERROR because of it; past the bound the run fails saying why, and what was not judged
stays pending for the next run. An unexpected exception in a lane, in its pool or its own thread, fails the
run with the reason instead of leaving it "running" for ever (tests/judging/test_judging_celery.py: the same on a
real worker).
"""

from __future__ import annotations

import logging
import threading
import time

import pytest
import redis
from django.db import connection

from judging import lane as lane_module
from judging import limiter as limiter_module
from judging import runner
from judging.limiter import RedisLimiter
from judging.models import JudgeConfig, JudgeRun, RunItem, Verdict
from tests.factories import make_llm_judge, make_scope
from tests.judging_helpers import KEY_VALUE

# Lane threads use their own database connections: the data must be committed for them to see it.
pytestmark = pytest.mark.django_db(transaction=True)
# Generous ceilings for things that happen when the code works; never reached then.
WITHIN_S = 60
OUTPUTS = 30


def in_background(run: JudgeRun, limiter) -> threading.Thread:
    def work() -> None:
        try:
            runner.run_in_process(run, limiter=limiter)
        finally:
            connection.close()

    thread = threading.Thread(target=work)
    thread.start()
    return thread


def wait_until(condition, what: str) -> None:
    deadline = time.monotonic() + WITHIN_S
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError(f"not within {WITHIN_S} s: {what}")
        time.sleep(0.05)


def start_mid_run(fake_llm, private_redis):
    """A run of OUTPUTS outputs (2 criteria each) on a bound of 2 whose slots live in the private Redis,
    working in the background; returns once 4 items are written."""
    fake_llm.latency_s = 0.2
    judge = make_llm_judge(fake_llm, max_concurrency=2)
    scope = make_scope(judge, responses=[f"Reply {i}: a refund of $40.00." for i in range(OUTPUTS)])
    run = runner.create_run(scope, mode=JudgeRun.Mode.IN_PROCESS)
    limiter = RedisLimiter(redis.Redis.from_url(private_redis.url), name=f"outage-{run.pk}", limit=2, lease_s=5)
    thread = in_background(run, limiter)
    wait_until(lambda: RunItem.objects.filter(run=run, state="done").count() >= 4, "4 items written")
    return run, scope, limiter, thread


def outage_noticed(caplog) -> bool:
    return any("Redis is unreachable" in r.getMessage() for r in caplog.records)


@pytest.mark.subprocess
def test_a_redis_restart_mid_run_is_waited_out_and_no_verdict_is_error(fake_llm, judge_key, private_redis, caplog):
    caplog.set_level(logging.WARNING, logger="judging.limiter")
    run, _, _, thread = start_mid_run(fake_llm, private_redis)
    private_redis.stop()
    # Down until a lane has found it down (the old code never said so: then this just waits its ceiling).
    deadline = time.monotonic() + 10
    while not outage_noticed(caplog) and time.monotonic() < deadline:
        time.sleep(0.05)
    private_redis.start()
    thread.join(timeout=WITHIN_S * 2)
    assert not thread.is_alive()
    run.refresh_from_db()
    outcomes = list(Verdict.objects.filter(run=run).values_list("outcome", "error_kind", "error_reason"))
    assert [o for o in outcomes if o[0] == "ERROR"] == []  # the old code: ERROR, internal ... ConnectionError
    assert run.status == "done" and run.error == ""
    assert len(outcomes) == OUTPUTS * 2 and {o[0] for o in outcomes} == {"PASS"}
    assert outage_noticed(caplog)  # the outage really came while the run was under way
    assert not RunItem.objects.filter(run=run).exclude(state="done").exists()


@pytest.mark.subprocess
def test_an_outage_longer_than_the_bound_fails_the_run_saying_why_and_leaves_the_rest_pending(
    fake_llm, judge_key, private_redis, caplog, monkeypatch
):
    monkeypatch.setattr(limiter_module, "OUTAGE_WAIT_S", 1.0)  # the bound, shortened for the test
    caplog.set_level(logging.WARNING, logger="judging.limiter")
    run, scope, limiter, thread = start_mid_run(fake_llm, private_redis)
    private_redis.stop()
    thread.join(timeout=WITHIN_S * 2)
    assert not thread.is_alive()
    run.refresh_from_db()
    assert run.status == "failed", run.status
    assert run.error.startswith("the judge's concurrency limiter (Redis) was unreachable for 1 s (ConnectionError")
    assert run.error.endswith("the items not judged yet are pending: start the run again once it is back")
    # No ERROR verdict, and nothing half-done: every item is written with both its verdicts, or pending.
    assert not Verdict.objects.filter(run=run, outcome="ERROR").exists()
    done = RunItem.objects.filter(run=run, state="done").count()
    assert Verdict.objects.filter(run=run).count() == 2 * done and done < OUTPUTS
    assert RunItem.objects.filter(run=run, state="pending").count() == OUTPUTS - done
    # The outage cost no item a claim (MAX_CLAIMS counts only what the item itself broke).
    assert not RunItem.objects.filter(run=run, state="pending", claims__gt=0).exists()
    # Redis back, the run started again: the written answers come from the cache, the rest from the judge.
    private_redis.start()
    fake_llm.reset()
    again = runner.create_run(scope, mode=JudgeRun.Mode.IN_PROCESS)
    assert runner.run_in_process(again, limiter=limiter) == "done"
    assert Verdict.objects.filter(run=again, outcome="PASS").count() == OUTPUTS * 2
    assert fake_llm.calls == OUTPUTS - done


def test_an_unexpected_exception_in_a_pool_thread_fails_the_run_and_makes_no_verdict(fake_llm, judge_key, monkeypatch):
    def broken(raw, keys):
        raise RuntimeError(f"parser bug, key {KEY_VALUE}")

    monkeypatch.setattr(lane_module.parse, "parse_answer", broken)
    scope = make_scope(make_llm_judge(fake_llm), responses=["$40 back.", "Refunded $40."])
    run = runner.create_run(scope, mode=JudgeRun.Mode.IN_PROCESS)
    assert runner.run_in_process(run) == "failed"  # the old code: "done", every verdict ERROR (internal)
    run.refresh_from_db()
    assert run.status == "failed"
    assert run.error == (
        "a lane stopped on an unexpected error (RuntimeError: parser bug, key [redacted]); see the worker log"
    )
    assert not Verdict.objects.filter(run=run).exists()
    assert RunItem.objects.filter(run=run, state="pending").count() == 2


def test_an_unexpected_exception_in_the_lanes_own_thread_fails_the_run(fake_llm, judge_key):
    judge = make_llm_judge(fake_llm, instruments={"correct_amount": {"kind": "max_length", "max_chars": 500}})
    scope = make_scope(judge, responses=["$40 back.", "Refunded $40."])
    run = runner.create_run(scope, mode=JudgeRun.Mode.IN_PROCESS)
    # Written after the run was checked, past every rule (update() validates nothing): no kind to evaluate.
    JudgeConfig.objects.filter(pk=judge.pk).update(instruments={"correct_amount": "max_length"})
    assert runner.run_in_process(run) == "failed"  # the old code: the exception escaped, the run stayed running
    run.refresh_from_db()
    assert run.status == "failed" and run.error.startswith("a lane stopped on an unexpected error (TypeError: ")
    assert not Verdict.objects.filter(run=run).exists() and fake_llm.calls == 0
    assert RunItem.objects.filter(run=run, state="pending", claims=0).count() == 2


@pytest.mark.subprocess
def test_a_run_without_trouble_still_ends_done(fake_llm, judge_key, private_redis):
    """The negative control: the same run, Redis limiter and all, when nothing breaks."""
    scope = make_scope(make_llm_judge(fake_llm, max_concurrency=2), responses=["$40 back.", "Refunded $40."])
    run = runner.create_run(scope, mode=JudgeRun.Mode.IN_PROCESS)
    limiter = RedisLimiter(redis.Redis.from_url(private_redis.url), name=f"calm-{run.pk}", limit=2, lease_s=5)
    assert runner.run_in_process(run, limiter=limiter) == "done"
    assert Verdict.objects.filter(run=run, outcome="PASS").count() == 4


@pytest.mark.subprocess
def test_giving_a_slot_back_or_cooling_down_never_waits_for_redis_nor_fails(private_redis, monkeypatch):
    """The call is over by then and its answer must be kept: the slot's lease frees it instead."""
    monkeypatch.setattr(limiter_module, "OUTAGE_WAIT_S", 0.5)
    limiter = RedisLimiter(redis.Redis.from_url(private_redis.url), name="give-back", limit=1, lease_s=5)
    token = limiter.acquire()
    private_redis.stop()
    limiter.release(token)  # the old code: redis.ConnectionError out of the call's `finally`
    limiter.cool_down(5)
    with pytest.raises(limiter_module.LimiterUnavailable, match=r"unreachable for 0.5 s \(ConnectionError"):
        limiter.acquire()
    private_redis.start()
    assert limiter.acquire()  # back: a fresh Redis has no holders
