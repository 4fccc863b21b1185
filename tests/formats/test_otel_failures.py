"""The traces receiver and finisher when something fails, with real parts: a broker (a redis-server of the test's
own) that is down when an export would schedule the finisher, and two finishers racing for the same traces on
PostgreSQL. Nothing is mocked."""

from __future__ import annotations

import os

import pytest

from evals.models import Case, Output
from formats.models import TraceBinding, TraceOutcome, TraceSpan
from formats.trace_outputs import finish_ready_traces
from tests.factories import make_eval_set
from tests.otel_helpers import export, post, refund_trace, traces_token, wait_for_outputs
from tests.services import race

pytestmark = pytest.mark.django_db(transaction=True)


@pytest.mark.celery
def test_with_the_broker_down_an_export_is_kept_and_finished_once_the_broker_is_back(
    client, lead, gunicorn, private_redis, workers, monkeypatch
):
    es = make_eval_set("refund-traces")
    token = traces_token(client, lead, es)
    server = gunicorn(private_redis.url)
    private_redis.stop()  # the broker is down: the finisher cannot be scheduled

    status, reply = server.export(token, refund_trace(trace=1, session="case-1"))

    assert status == 200 and not reply.HasField("partial_success")  # stored: the exporter must not send it again
    assert TraceSpan.objects.filter(trace_id=f"{1:032x}").count() == 4
    assert not Output.objects.exists()

    private_redis.start()  # back, empty: the failed schedule left nothing on it
    status, _ = server.export(token, refund_trace(trace=2, session="case-2"))
    assert status == 200
    monkeypatch.setenv("ICEWATER_OTLP_QUIET_SECONDS", "1")  # the worker's own settings
    workers(concurrency=1, broker_url=private_redis.url)

    # The finisher the second export scheduled finishes every ready trace of the token, the first one too.
    wait_for_outputs(es, 2)
    assert sorted(Case.objects.filter(eval_set=es).values_list("case_id", flat=True)) == ["case-1", "case-2"]
    assert not TraceSpan.objects.exists()


@pytest.mark.celery
def test_with_the_broker_down_and_no_later_export_a_worker_that_starts_finishes_the_kept_spans(
    client, lead, gunicorn, private_redis, workers, monkeypatch
):
    es = make_eval_set("refund-traces")
    token = traces_token(client, lead, es)
    server = gunicorn(private_redis.url)
    private_redis.stop()
    assert server.export(token, refund_trace(trace=1, session="case-1"))[0] == 200
    private_redis.start()  # back, empty: nothing asks for the spans to be finished

    monkeypatch.setenv("ICEWATER_OTLP_QUIET_SECONDS", "1")
    workers(concurrency=1, broker_url=private_redis.url)  # e.g. the worker restarted once the broker was back

    wait_for_outputs(es, 1)
    assert not TraceSpan.objects.exists()


@pytest.mark.slow
def test_with_the_broker_down_and_no_later_export_manage_py_finish_traces_finishes_the_kept_spans(
    client, lead, gunicorn, private_redis
):
    from django.core.management import call_command

    es = make_eval_set("refund-traces")
    token = traces_token(client, lead, es)
    server = gunicorn(private_redis.url)
    private_redis.stop()

    assert server.export(token, refund_trace(trace=1, session="case-1"))[0] == 200

    call_command("finish_traces", "--now", stdout=open(os.devnull, "w"))  # noqa: SIM115 - closed with the process
    assert Output.objects.get(case__eval_set=es).case.case_id == "case-1"
    assert not TraceSpan.objects.exists()


TRACES = 600  # three of finish_ready_traces' batches of 200


def test_two_finishers_racing_for_the_same_traces_make_each_output_once(client, lead):
    es = make_eval_set("refund-traces")
    token = traces_token(client, lead, es)
    for first in range(1, TRACES + 1, 100):
        spans = [s for n in range(first, first + 100) for s in refund_trace(trace=n, session=f"case-{n}")]
        assert post(client, export(spans).SerializeToString(), token).status_code == 200
    assert TraceSpan.objects.count() == TRACES * 4
    binding = TraceBinding.objects.get(eval_set=es)

    done = race(*[lambda: finish_ready_traces(binding_id=binding.pk, quiet_seconds=0)] * 2)

    assert not any(isinstance(result, Exception) for result in done), done
    assert sum(result.outputs for result in done) == TRACES
    assert Output.objects.filter(case__eval_set=es).count() == TRACES
    assert TraceOutcome.objects.count() == TRACES
    assert set(TraceOutcome.objects.values_list("status", flat=True)) == {TraceOutcome.Status.OUTPUT}
    assert not TraceSpan.objects.exists()


def test_two_tokens_finishing_a_trace_of_the_same_case_at_once_make_one_output_and_one_refusal(client, lead):
    # Two tokens into one eval set, each with a trace of case-1 by the same agent version: their finishers lock
    # different rows, so both may write case-1 at the same moment; the database's unique case decides.
    es = make_eval_set("refund-traces")
    for trace in (1, 2):
        token = traces_token(client, lead, es)
        post(client, export(refund_trace(trace=trace, session="case-1")).SerializeToString(), token)
    bindings = list(TraceBinding.objects.filter(eval_set=es).order_by("pk").values_list("pk", flat=True))

    done = race(*[lambda b=b: finish_ready_traces(binding_id=b, quiet_seconds=0) for b in bindings])
    assert not any(isinstance(result, Exception) for result in done), done
    for binding in bindings:  # a trace that met the other's write waits for the next run, which sees it
        finish_ready_traces(binding_id=binding, quiet_seconds=0)

    assert Output.objects.filter(case__eval_set=es).count() == 1
    assert sorted(TraceOutcome.objects.values_list("status", "reason")) == [
        ("output", ""),
        (
            "rejected",
            "case 'case-1' already has an output of agent version 'bot-1.4'; name another case id or agent version",
        ),
    ]
    assert not TraceSpan.objects.exists()
