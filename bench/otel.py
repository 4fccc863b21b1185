"""OpenTelemetry spans ingested per second by the traces receiver (POST /api/otlp/v1/traces) on gunicorn.

    python bench/otel.py                # PostgreSQL: a scratch database, gunicorn with scripts/run.sh's workers
    python bench/otel.py --embedded     # `make run`'s settings: SQLite in a fresh data folder, the same gunicorn
    python bench/otel.py --exports 40   # a quicker run

The server is gunicorn as scripts/run.sh starts it (2 sync workers, 1 thread each; read from the script). The
agent side is --clients threads, each posting export requests as the SDK's BatchSpanProcessor sends them: 512
spans a request (its default batch), protobuf, keep-alive. A trace is 8 spans (an agent root, 3 LLM spans with
OpenInference messages, 4 TOOL spans with JSON arguments and results, about 2.5 KB a span encoded). Requests are
built before the clock starts. It prints spans/s accepted (every answer must be 200 with nothing rejected, and
every span must be in the staging table afterwards), then how fast `finish_traces` turns the staged traces into
outputs in one process. Goal: >= 2,000 spans/s ingested on PostgreSQL with 2 workers.
"""

from __future__ import annotations

import argparse
import http.client
import json
import os
import secrets
import shutil
import signal
import sys
import tempfile
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from labeling_load import run_sh_server, serve, stop  # noqa: E402 - the same gunicorn as the labeling bench
from scratch_database import drop_database, server_env  # noqa: E402 - after the path is set

SPANS_PER_EXPORT = 512  # the SDK's BatchSpanProcessor default (OTEL_BSP_MAX_EXPORT_BATCH_SIZE)
SPANS_PER_TRACE = 8
TOKEN = "icw_bench-" + secrets.token_urlsafe(16)


def exports(n: int) -> list[bytes]:
    """`n` export requests of SPANS_PER_EXPORT spans, whole traces, every id unique."""
    from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
    from opentelemetry.proto.common.v1.common_pb2 import AnyValue, KeyValue
    from opentelemetry.proto.trace.v1.trace_pb2 import ResourceSpans, ScopeSpans, Span

    def attrs(**values: str) -> list[KeyValue]:
        return [KeyValue(key=k.replace("__", "."), value=AnyValue(string_value=v)) for k, v in values.items()]

    question = "I was charged twice for order 1042, please refund the duplicate charge. " * 3
    answer = "I have refunded the duplicate charge of $40.00; you will see it within 5 business days. " * 3
    t0 = 1_767_000_000_000_000_000
    bodies, trace_no = [], 0
    for _ in range(n):
        spans = []
        for _ in range(SPANS_PER_EXPORT // SPANS_PER_TRACE):
            trace_no += 1
            trace_id = trace_no.to_bytes(16, "big")

            def span(number: int, name: str, parent: int, **values: str) -> Span:
                return Span(
                    trace_id=trace_id,  # noqa: B023 - used at once, inside this iteration
                    span_id=(trace_no * 16 + number).to_bytes(8, "big"),  # noqa: B023
                    parent_span_id=(trace_no * 16 + parent).to_bytes(8, "big") if parent else b"",  # noqa: B023
                    name=name,
                    start_time_unix_nano=t0 + number * 1_000_000,
                    end_time_unix_nano=t0 + (number + 1) * 1_000_000,
                    attributes=attrs(**values),
                )

            spans.append(span(1, "agent", 0, openinference__span__kind="AGENT", session__id=f"ticket-{trace_no}"))
            for i in range(3):
                spans.append(
                    span(2 + 2 * i, "ChatCompletion", 1, openinference__span__kind="LLM",
                         llm__input_messages__0__message__role="user",
                         llm__input_messages__0__message__content=question,
                         llm__output_messages__0__message__role="assistant",
                         llm__output_messages__0__message__content=answer)
                )  # fmt: skip
                spans.append(
                    span(3 + 2 * i, "lookup_order", 1, openinference__span__kind="TOOL", tool__name="lookup_order",
                         input__value=json.dumps({"order": 1042, "query": question[:80]}),
                         output__value=json.dumps({"status": "charged twice", "amount": 40, "note": answer[:200]}))
                )  # fmt: skip
            refund = {"input__value": '{"order": 1042, "amount": 40}', "output__value": '{"refund": "R-9"}'}
            spans.append(
                span(9, "issue_refund", 1, openinference__span__kind="TOOL", tool__name="issue_refund", **refund)
            )
        request = ExportTraceServiceRequest(resource_spans=[ResourceSpans(scope_spans=[ScopeSpans(spans=spans)])])
        request.resource_spans[0].resource.attributes.extend(attrs(service__name="bot", service__version="bot-7"))
        bodies.append(request.SerializeToString())
    return bodies


def populate() -> None:
    from api.models import GateToken, TokenScope, hash_token
    from evals.models import EvalSet, Membership, Role, Rubric, RubricVersion, User, Workspace
    from formats.models import TraceBinding

    # One workspace holds the bench's rows, its token and its trace binding.
    workspace = Workspace.objects.create(slug="bench", name="Bench")
    lead = User.objects.create(username="bench-lead")
    Membership.objects.create(user=lead, workspace=workspace, role=Role.LEAD)
    rubric = Rubric.objects.create(workspace=workspace, name="bench-rubric")
    rv = RubricVersion.objects.create(rubric=rubric, version="1", instruction="Grade it.", content_hash="x")
    binding = TraceBinding.objects.create(eval_set=EvalSet.objects.create(workspace=workspace, name="bench-traces"))
    GateToken.objects.create(
        workspace=workspace, project="bench", rubric_version=rv, scopes=[TokenScope.TRACES], trace_binding=binding,
        token_hash=hash_token(TOKEN), hint=TOKEN[:8], created_by=lead,
    )  # fmt: skip


def client(port: int, bodies: list[bytes], failures: list[str]) -> None:
    from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceResponse

    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=120)
    headers = {"Content-Type": "application/x-protobuf", "Authorization": f"Bearer {TOKEN}"}
    for body in bodies:
        connection.request("POST", "/api/otlp/v1/traces", body=body, headers=headers)
        answer = connection.getresponse()
        data = answer.read()
        reply = ExportTraceServiceResponse()
        if answer.status == 200:
            reply.ParseFromString(data)
        if answer.status != 200 or reply.partial_success.rejected_spans:
            failures.append(f"{answer.status} {data[:200]!r}")
    connection.close()


def server_cpu(pid: int) -> float:
    """User and system CPU seconds of gunicorn's workers so far."""
    import psutil

    return sum(sum(c.cpu_times()[:2]) for c in psutil.Process(pid).children(recursive=True))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--embedded", action="store_true", help="`make run`'s settings: SQLite and its gunicorn")
    parser.add_argument("--exports", type=int, default=120, help=f"export requests of {SPANS_PER_EXPORT} spans")
    parser.add_argument("--clients", type=int, default=4, help="agents exporting at once")
    parser.add_argument("--timeout", type=int, default=900, help="give up after this many seconds")
    args = parser.parse_args()
    workers, threads = run_sh_server()
    signal.signal(signal.SIGALRM, lambda *_: (_ for _ in ()).throw(TimeoutError(f"bench exceeded {args.timeout}s")))
    signal.alarm(args.timeout)

    workdir = Path(tempfile.mkdtemp(prefix="icewater-bench-otel-"))
    env = {k: v for k, v in os.environ.items() if k != "CELERY_BROKER_URL"}
    # No Celery worker runs: the receiver's finishing tasks queue up on the file-system broker, and the bench
    # finishes the traces itself afterwards. The waiting-spans bound would otherwise answer 429 mid-run.
    env.update(
        ICEWATER_DATA_DIR=str(workdir), DJANGO_SETTINGS_MODULE="config.settings",
        ICEWATER_OTLP_MAX_WAITING_SPANS=str(10**9),
    )  # fmt: skip
    scratch = None if args.embedded else f"icewater_bench_otel_{os.getpid()}"
    admin = server_env(env, embedded=args.embedded, name=scratch or "")
    server = None
    try:
        import django

        django.setup()
        from django.core.management import call_command
        from django.db import connection

        from formats.models import TraceBinding, TraceOutcome, TraceSpan
        from formats.trace_outputs import finish_ready_traces

        call_command("migrate", verbosity=0)
        populate()
        connection.close()
        bodies = exports(args.exports)
        spans = args.exports * SPANS_PER_EXPORT
        size = sum(map(len, bodies)) / len(bodies)
        server, port = serve(env, workdir / "access.log", workers=workers, threads=threads)
        failures: list[str] = []
        share = [bodies[i :: args.clients] for i in range(args.clients)]
        pool = [threading.Thread(target=client, args=(port, part, failures)) for part in share]
        cpu_before = server_cpu(server.pid)
        started = time.perf_counter()
        for thread in pool:
            thread.start()
        for thread in pool:
            thread.join()
        wall = time.perf_counter() - started
        cpu = server_cpu(server.pid) - cpu_before
        where = f"SQLite in {workdir}" if args.embedded else "PostgreSQL"
        stored = TraceSpan.objects.count()
        print(
            f"{where}, gunicorn {workers} sync workers x {threads} thread (scripts/run.sh), {args.clients} clients: "
            f"{spans:,} spans in {args.exports} exports of {SPANS_PER_EXPORT} ({size / 1024:.0f} KB each) in "
            f"{wall:.1f}s = {spans / wall:,.0f} spans/s ingested; {len(failures)} failed exports; "
            f"{stored:,} spans staged"
        )
        # Load-independent: what the web workers themselves spent. On a machine others share, spans/s above is
        # what this run got; spans per CPU-second of the workers says what 2 cores of their own would approach
        # (less what the database takes on the same cores).
        print(f"gunicorn workers' CPU: {cpu:.1f}s = {spans / cpu:,.0f} spans per CPU-second")
        if failures or stored != spans:
            raise SystemExit(f"FAILED: {failures[:3]}; staged {stored:,} of {spans:,}")
        binding = TraceBinding.objects.get()
        started = time.perf_counter()
        done = finish_ready_traces(binding_id=binding.pk, quiet_seconds=0)
        wall = time.perf_counter() - started
        traces = spans // SPANS_PER_TRACE
        print(
            f"finish_traces (one process): {done.outputs:,} outputs of {traces:,} traces in {wall:.1f}s = "
            f"{traces / wall:,.0f} traces/s ({spans / wall:,.0f} spans/s); "
            f"{TraceOutcome.objects.exclude(status='output').count()} not outputs"
        )
        print(f"load average now: {', '.join(f'{x:.1f}' for x in os.getloadavg())} (the machine is shared)")
    finally:
        if server is not None:
            stop(server)
        if admin is not None and scratch is not None:
            from django.db import connections

            connections.close_all()
            drop_database(admin, scratch)
        shutil.rmtree(workdir, ignore_errors=True)


if __name__ == "__main__":
    main()
