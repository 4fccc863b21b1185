"""Periodic work with real processes: Celery beat (killed, started again on its schedule file, and a second one
by mistake), a Celery worker, a redis-server of the test's own as the broker, and the app on gunicorn. Nothing is
mocked. The sweep finishes a trace whose spans came while the broker was down, with no export after them; and
across the restart and the second beat every slot of the sweep ran at most once."""

from __future__ import annotations

import datetime as dt
import re
import time
from collections import Counter

import pytest
from django.utils import timezone

from periodic.models import PeriodicRun
from tests.factories import make_eval_set
from tests.otel_helpers import refund_trace, traces_token, wait_for_outputs

pytestmark = [pytest.mark.django_db(transaction=True), pytest.mark.celery]

PERIOD_S = 1
PERIOD = dt.timedelta(seconds=PERIOD_S)
RAN = re.compile(r"periodic: finish-traces, slot (\S+): ran: (.*)")
REFUSED = re.compile(r"periodic: finish-traces, slot (\S+): already claimed")
# Generous ceiling for the worker to work through what the beats sent; never reached when it works.
SETTLE_S = 60


def wait_until_the_worker_is_idle(worker) -> str:
    """The worker's log once it has stopped growing for a few periods (runs sent late expire after one)."""
    deadline = time.monotonic() + SETTLE_S
    seen = ""
    while time.monotonic() < deadline:
        time.sleep(3 * PERIOD_S)
        now = worker.log.read_text(errors="replace")
        if now == seen:
            return now
        seen = now
    raise AssertionError("the worker kept working")


def test_beat_finishes_traces_no_export_asked_for_and_runs_each_slot_once_across_a_restart_and_a_second_beat(
    client, lead, gunicorn, private_redis, workers, beats, monkeypatch, tmp_path
):
    es = make_eval_set("refund-traces")
    token = traces_token(client, lead, es)
    monkeypatch.setenv("ICEWATER_OTLP_QUIET_SECONDS", "1")  # the worker's own settings
    worker = workers(concurrency=1, broker_url=private_redis.url)  # at its start no spans wait: nothing to resume
    schedule = tmp_path / "celerybeat-schedule"
    beat = beats(private_redis.url, schedule, period_s=PERIOD_S)
    server = gunicorn(private_redis.url)

    private_redis.stop()  # the broker is down: the export cannot schedule the finisher
    assert server.export(token, refund_trace(trace=1, session="case-1"))[0] == 200
    private_redis.start()  # back, empty; no export comes after

    wait_for_outputs(es, 1)
    log = worker.log.read_text(errors="replace")
    assert any(said.startswith("1 output(s) made") for _, said in RAN.findall(log)), log[-3000:]
    assert "formats.tasks.finish_traces[" not in log  # no finisher ran: the sweep made the output

    beat.kill()
    killed = timezone.now()
    time.sleep(4 * PERIOD_S)  # slots go by with no beat
    restarted = timezone.now()
    beat = beats(private_redis.url, schedule, period_s=PERIOD_S)  # the same schedule file, as it was left
    second = beats(private_redis.url, tmp_path / "second-schedule", period_s=PERIOD_S)  # by mistake, a second beat
    second.wait_sent(4)
    beat.stop()
    second.stop()
    log = wait_until_the_worker_is_idle(worker)

    ran = [slot for slot, _ in RAN.findall(log)]
    assert [slot for slot, times in Counter(ran).items() if times > 1] == []  # no slot ran twice
    claimed = PeriodicRun.objects.filter(job="finish-traces").values_list("slot", flat=True)
    assert sorted(dt.datetime.fromisoformat(slot) for slot in ran) == sorted(claimed)  # each claim ran, once
    assert REFUSED.findall(log)  # the second beat's sends of slots already run were refused
    slots = [dt.datetime.fromisoformat(slot) for slot in ran]
    assert all(slot.microsecond == 0 for slot in slots)  # whole seconds: the slots of a 1 s period
    # While no beat ran, no slot did (the missed slots are not run one by one afterwards); once back, they run again.
    assert [s for s in slots if killed + PERIOD < s < restarted - PERIOD] == []
    assert any(s >= restarted for s in slots)
