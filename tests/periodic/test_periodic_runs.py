"""Each run of a periodic job is claimed once (periodic/tasks.py): of two claims of one slot one wins, and a run
delivered twice, even at the same moment, runs the job once; the trace sweep finishes traces no export asked for.
On PostgreSQL, with threads that race as two workers would."""

from __future__ import annotations

import datetime as dt

import pytest

from evals.models import Output
from formats.models import TraceSpan
from periodic.jobs import JOBS, Job
from periodic.models import PeriodicRun
from periodic.tasks import KEEP_RUNS, run_job
from tests.factories import make_eval_set
from tests.otel_helpers import export, post, refund_trace, traces_token
from tests.services import race

# Real commits: racing threads each have their own connection.
pytestmark = pytest.mark.django_db(transaction=True)

SLOT = dt.datetime(2026, 12, 6, 21, 0, tzinfo=dt.UTC)


@pytest.fixture
def counted_job(monkeypatch) -> list[str]:
    """A job named "count" that notes each run it does."""
    ran: list[str] = []

    def count() -> str:
        ran.append("ran")
        return "counted"

    monkeypatch.setitem(JOBS, "count", Job("count", dt.timedelta(seconds=1), count))
    return ran


def test_of_two_claims_of_one_slot_the_first_wins():
    first = PeriodicRun.objects.claim(job="finish-traces", slot=SLOT)
    second = PeriodicRun.objects.claim(job="finish-traces", slot=SLOT)
    assert first is not None and second is None
    assert PeriodicRun.objects.get() == first


def test_of_two_claims_of_one_slot_at_the_same_moment_one_wins():
    claims = race(*[lambda: PeriodicRun.objects.claim(job="finish-traces", slot=SLOT)] * 2)
    assert not [c for c in claims if isinstance(c, Exception)], claims
    assert sorted(c is None for c in claims) == [False, True]
    assert PeriodicRun.objects.count() == 1


def test_the_next_slot_and_another_job_are_claims_of_their_own():
    assert PeriodicRun.objects.claim(job="finish-traces", slot=SLOT)
    assert PeriodicRun.objects.claim(job="finish-traces", slot=SLOT + dt.timedelta(seconds=60))
    assert PeriodicRun.objects.claim(job="count", slot=SLOT)


def test_a_run_delivered_twice_at_the_same_moment_runs_the_job_once(counted_job):
    done = race(*[lambda: run_job("count", SLOT.isoformat())] * 2)
    assert done == [None, None]
    assert counted_job == ["ran"]
    run = PeriodicRun.objects.get(job="count")
    assert run.slot == SLOT and run.finished_at is not None


def test_negative_control_without_the_claim_a_run_delivered_twice_runs_the_job_twice(counted_job, monkeypatch):
    # What the claim prevents, with the same two deliveries: a claim that always wins lets both run.
    monkeypatch.setattr(PeriodicRun.objects, "claim", lambda *, job, slot: PeriodicRun(job=job, slot=slot))
    race(*[lambda: run_job("count", SLOT.isoformat())] * 2)
    assert counted_job == ["ran", "ran"]


def test_a_run_of_a_job_that_no_longer_exists_is_dropped_unclaimed(counted_job):
    run_job("gone", SLOT.isoformat())
    assert not PeriodicRun.objects.exists() and counted_job == []


def test_runs_older_than_a_week_are_deleted_by_the_jobs_later_runs(counted_job):
    old = PeriodicRun.objects.create(job="count", slot=SLOT - KEEP_RUNS - dt.timedelta(seconds=1))
    kept = PeriodicRun.objects.create(job="count", slot=SLOT - KEEP_RUNS)
    other_job = PeriodicRun.objects.create(job="finish-traces", slot=old.slot)
    run_job("count", SLOT.isoformat())
    assert set(PeriodicRun.objects.values_list("pk", flat=True)) == {
        kept.pk,
        other_job.pk,
        PeriodicRun.objects.get(slot=SLOT).pk,
    }


def test_the_trace_sweep_finishes_a_trace_whose_spans_came_with_no_export_after_them(client, lead, settings):
    # No worker runs here: the finisher the export scheduled is never run, as when the broker was down.
    settings.ICEWATER_OTLP_QUIET_SECONDS = 0
    es = make_eval_set("refund-traces")
    token = traces_token(client, lead, es)
    assert post(client, export(refund_trace(trace=1, session="case-1")).SerializeToString(), token).status_code == 200
    assert not Output.objects.exists()

    run_job("finish-traces", SLOT.isoformat())

    assert Output.objects.get(case__eval_set=es).case.case_id == "case-1"
    assert not TraceSpan.objects.exists()
    assert PeriodicRun.objects.get(job="finish-traces").finished_at is not None


def test_the_trace_sweep_says_what_it_did_and_leaves_traces_that_are_not_quiet_yet(client, lead, settings):
    settings.ICEWATER_OTLP_QUIET_SECONDS = 3600
    es = make_eval_set("refund-traces")
    token = traces_token(client, lead, es)
    post(client, export(refund_trace(trace=1, session="case-1")).SerializeToString(), token)
    said = JOBS["finish-traces"].run()
    assert said == "0 output(s) made, 0 trace(s) sampled out, 0 refused, 0 waiting for their root span"
    assert TraceSpan.objects.count() == 4
