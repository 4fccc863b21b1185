"""The traces receiver and finisher when something fails, with real parts: a broker (a redis-server of the test's
own) that is down when an export would schedule the finisher, and two finishers racing for the same traces on
PostgreSQL. Nothing is mocked."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import threading
import time

import pytest
import requests
from django.conf import settings
from django.db import connection
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceResponse

from evals.models import Case, Output
from formats.models import TraceBinding, TraceOutcome, TraceSpan
from formats.trace_outputs import finish_ready_traces
from tests.factories import make_eval_set
from tests.otel_helpers import PROTOBUF, URL, export, post, refund_trace, traces_token
from tests.services import ROOT, database_url

pytestmark = pytest.mark.django_db(transaction=True)

# Generous ceilings for a server to start and a worker to finish traces; never reached when it works.
WITHIN_S = 90


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
        deadline = time.monotonic() + WITHIN_S
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


@pytest.fixture
def gunicorn(tmp_path):
    started: list[Gunicorn] = []

    def start(broker_url: str) -> Gunicorn:
        server = Gunicorn(tmp_path, broker_url)
        started.append(server)
        return server

    yield start
    for server in started:
        server.stop()


def wait_for_outputs(eval_set, n: int) -> None:
    deadline = time.monotonic() + WITHIN_S
    while time.monotonic() < deadline:
        if Output.objects.filter(case__eval_set=eval_set).count() >= n:
            return
        time.sleep(0.3)
    outcomes = list(TraceOutcome.objects.values_list("trace_id", "status", "reason"))
    raise AssertionError(f"fewer than {n} outputs within {WITHIN_S} s; outcomes {outcomes}")


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
