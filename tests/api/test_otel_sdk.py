"""Real OpenTelemetry clients against a live Icewater server: the OpenTelemetry SDK with its OTLP/HTTP exporter,
configured by the environment variables docs/formats.md shows, and OpenInference's instrumentation of the openai
client, which calls the fake LLM (the only fake) inside a small tool-calling agent loop written here. A real Celery
worker finishes the traces; the outputs are then labeled and judged like any other."""

from __future__ import annotations

import json
import time
from collections.abc import Sequence

import openai
import pytest
import requests
from openinference.instrumentation.openai import OpenAIInstrumentor
from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans
from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
from opentelemetry.sdk.resources import Resource
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import BatchSpanProcessor, SpanExporter, SpanExportResult

from evals.models import Output
from formats.models import TraceOutcome
from judging import runner
from judging.models import JudgeRun
from tests.factories import make_eval_set, make_llm_judge, make_rubric_version, open_queue
from tests.judging_helpers import judge_in_process
from tests.labeling_helpers import claim_via_next
from tests.otel_helpers import as_otlp_json, traces_token

pytestmark = [pytest.mark.celery, pytest.mark.django_db(transaction=True)]

# Waiting for the worker to finish a trace: generous, never reached when it works (no timing is asserted).
WITHIN_S = 90
LOOKUP = {
    "type": "function",
    "function": {
        "name": "lookup_order",
        "description": "Find an order by the customer's words.",
        "parameters": {"type": "object", "properties": {"query": {"type": "string"}}, "required": ["query"]},
    },
}


def lookup_order(query: str) -> str:
    return json.dumps({"order": "A-17", "status": "delivered", "asked": query})


def run_agent(client: openai.OpenAI, tracer, question: str, session: str) -> str:
    """A tool-calling loop: the model asks for a tool, we run it (in a TOOL span, as OpenInference describes one),
    send the result back, and the model answers."""
    with tracer.start_as_current_span(
        "support-agent", attributes={"openinference.span.kind": "AGENT", "session.id": session}
    ):
        messages: list = [{"role": "user", "content": question}]
        while True:
            reply = client.chat.completions.create(model="agent-model", messages=messages, tools=[LOOKUP])
            message = reply.choices[0].message
            if not message.tool_calls:
                return message.content or ""
            messages.append(message.model_dump(exclude_none=True))
            for call in message.tool_calls:
                arguments = call.function.arguments
                with tracer.start_as_current_span(
                    call.function.name,
                    attributes={
                        "openinference.span.kind": "TOOL",
                        "tool.name": call.function.name,
                        "input.value": arguments,
                    },
                ) as tool_span:
                    result = lookup_order(**json.loads(arguments))
                    tool_span.set_attribute("output.value", result)
                messages.append({"role": "tool", "tool_call_id": call.id, "content": result})


class OtlpJsonExporter(SpanExporter):
    """The Python SDK has no OTLP/JSON exporter: this one takes the SDK's own protobuf request (its encoder) and
    sends it in the OTLP/JSON encoding (json_format, with hex ids as the specification writes them)."""

    def __init__(self, endpoint: str, token: str) -> None:
        self.endpoint, self.token = endpoint, token
        self.answers: list[tuple[int, dict]] = []

    def export(self, spans: Sequence[ReadableSpan]) -> SpanExportResult:
        answer = requests.post(
            self.endpoint,
            data=as_otlp_json(encode_spans(spans)),
            headers={"Content-Type": "application/json", "Authorization": f"Bearer {self.token}"},
            timeout=30,
        )
        # The status and body only, never the Response: its raw response holds urllib3's connection pool, which
        # (urllib3 2) closes its kept-alive connection only when collected. A kept Response kept the live server's
        # request thread waiting on that connection, holding its database connection (CONN_MAX_AGE), and the test
        # database could not be dropped at the end of the run.
        self.answers.append((answer.status_code, answer.json()))
        return SpanExportResult.SUCCESS if answer.ok else SpanExportResult.FAILURE

    def shutdown(self) -> None:
        pass


@pytest.fixture
def traced(monkeypatch, settings, fake_llm, workers):
    """A worker that finishes traces after one quiet second, and the instrumented openai client."""
    settings.ICEWATER_OTLP_QUIET_SECONDS = 1  # the live server's countdown
    monkeypatch.setenv("ICEWATER_OTLP_QUIET_SECONDS", "1")  # the worker's own settings
    workers(concurrency=1)
    instrumentor = OpenAIInstrumentor()
    client = openai.OpenAI(base_url=fake_llm.openai_base_url, api_key="sk-agent-test", max_retries=0)
    yield client, instrumentor
    instrumentor.uninstrument()
    client.close()  # its kept-alive connection to the fake LLM


def traced_provider(instrumentor, exporter) -> TracerProvider:
    provider = TracerProvider(resource=Resource.create({"service.name": "support-bot", "service.version": "bot-7"}))
    provider.add_span_processor(BatchSpanProcessor(exporter))
    instrumentor.instrument(tracer_provider=provider)
    return provider


def wait_for_output(eval_set, case_id: str) -> Output:
    deadline = time.monotonic() + WITHIN_S
    while time.monotonic() < deadline:
        found = Output.objects.filter(case__eval_set=eval_set, case__case_id=case_id).select_related("case").first()
        if found is not None:
            return found
        time.sleep(0.3)
    outcomes = list(TraceOutcome.objects.values_list("status", "reason"))
    raise AssertionError(f"no output for {case_id} within {WITHIN_S} s; outcomes: {outcomes}")


@pytest.mark.parametrize("compression", ["none", "gzip"])
def test_the_sdks_protobuf_exporter_sends_an_agent_run_that_becomes_an_output_to_label_and_judge(
    client, lead, annotator, live_server, traced, monkeypatch, fake_llm, judge_key, compression
):
    openai_client, instrumentor = traced
    es = make_eval_set("support-traces")
    token = traces_token(client, lead, es)
    # Exactly what docs/formats.md tells a user to set.
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", f"{live_server.url}/api/otlp/v1/traces")
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_HEADERS", f"Authorization=Bearer%20{token}")
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_COMPRESSION", compression)
    provider = traced_provider(instrumentor, OTLPSpanExporter())
    tracer = provider.get_tracer("support-bot")

    answer = run_agent(openai_client, tracer, "Where is my order A-17?", session="ticket-31")
    assert provider.force_flush()

    output = wait_for_output(es, "ticket-31")
    assert output.case.input == "Where is my order A-17?"  # the first LLM span's user message
    assert output.response == answer  # the last LLM span's answer
    assert answer.startswith("Done: ")
    assert output.agent_version == "bot-7"
    assert output.tool_calls == [
        {
            "name": "lookup_order",
            "args": {"query": "Where is my order A-17?"},
            "response": {"order": "A-17", "status": "delivered", "asked": "Where is my order A-17?"},
        }
    ]
    kinds = [s["attributes"].get("openinference.span.kind") for s in output.metadata["otel"]["spans"]]
    assert kinds == ["AGENT", "LLM", "TOOL", "LLM"]  # the span tree, in start order
    provider.shutdown()

    # Labeled like any other output: it is what the annotator's Next reserves.
    rubric = make_rubric_version()
    open_queue(es, rubric, lead)
    assert claim_via_next(client, annotator, es).output == output
    # Judged like any other: a run over the eval set completes with a verdict per criterion.
    run = judge_in_process(runner.Scope(es, rubric, make_llm_judge(fake_llm), ""))
    assert run.status == JudgeRun.Status.DONE
    assert run.verdicts.filter(output=output).count() == rubric.criteria.count()


def test_the_sdks_spans_sent_as_otlp_json_become_an_output(client, lead, live_server, traced):
    openai_client, instrumentor = traced
    es = make_eval_set("support-traces-json")
    token = traces_token(client, lead, es)
    exporter = OtlpJsonExporter(f"{live_server.url}/api/otlp/v1/traces", token)
    provider = traced_provider(instrumentor, exporter)

    run_agent(openai_client, provider.get_tracer("support-bot"), "Cancel order B-2.", session="ticket-32")
    assert provider.force_flush()

    assert exporter.answers and all(a == (200, {}) for a in exporter.answers)
    output = wait_for_output(es, "ticket-32")
    assert output.case.input == "Cancel order B-2."
    assert [c["name"] for c in output.tool_calls] == ["lookup_order"]
    provider.shutdown()
