"""OpenTelemetry export requests built with opentelemetry-proto's own classes, and calls to the traces receiver
(POST /api/otlp/v1/traces) with them."""

from __future__ import annotations

import gzip
import json
import time

from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest
from opentelemetry.proto.common.v1.common_pb2 import AnyValue, KeyValue
from opentelemetry.proto.trace.v1.trace_pb2 import ResourceSpans, ScopeSpans, Span

from evals.models import Output
from formats.models import TraceOutcome
from tests.api_helpers import create_token
from tests.factories import make_rubric_version

URL = "/api/otlp/v1/traces"
PROTOBUF = "application/x-protobuf"
T0 = 1_767_000_000_000_000_000  # a start time in nanoseconds (late 2025)
MS = 1_000_000
# A generous ceiling for a worker to finish traces; never reached when it works.
WITHIN_S = 90


def traces_token(client, lead, eval_set, **fields) -> str:
    """A token with the traces scope bound to `eval_set`, made on the gate page as a lead makes it."""
    form = {
        "trace_eval_set": eval_set.pk,
        "trace_case_id_attribute": "session.id",
        "trace_agent_version_attribute": "service.version",
        "trace_sample_one_in": 1,
    }  # the form's initial values, as a browser sends them
    form.update(fields)
    return create_token(client, lead, ["traces"], make_rubric_version(), pattern=eval_set.name, **form)


def value(v) -> AnyValue:
    if isinstance(v, bool):
        return AnyValue(bool_value=v)
    if isinstance(v, int):
        return AnyValue(int_value=v)
    if isinstance(v, float):
        return AnyValue(double_value=v)
    return AnyValue(string_value=v)


def span(trace: int, span_id: int, parent: int = 0, name: str = "step", start_ms: int = 0, end_ms: int = 10, **attrs):
    """A span of trace number `trace` (ids are the numbers, as bytes), times in ms after T0; attribute names with
    dots are passed as a dict in `attrs["a"]`."""
    return Span(
        trace_id=trace.to_bytes(16, "big"),
        span_id=span_id.to_bytes(8, "big"),
        parent_span_id=parent.to_bytes(8, "big") if parent else b"",
        name=name,
        start_time_unix_nano=T0 + start_ms * MS,
        end_time_unix_nano=T0 + end_ms * MS,
        attributes=[KeyValue(key=k, value=value(v)) for k, v in attrs.get("a", {}).items()],
    )


def export(spans: list[Span], resource: dict | None = None) -> ExportTraceServiceRequest:
    resource_spans = ResourceSpans(scope_spans=[ScopeSpans(spans=spans)])
    for k, v in (resource or {"service.name": "refund-bot", "service.version": "bot-1.4"}).items():
        resource_spans.resource.attributes.append(KeyValue(key=k, value=value(v)))
    return ExportTraceServiceRequest(resource_spans=[resource_spans])


def post(client, body: bytes, token: str | None, content_type: str = PROTOBUF, gzipped: bool = False, **headers):
    if token is not None:
        headers["HTTP_AUTHORIZATION"] = f"Bearer {token}"
    if gzipped:
        body = gzip.compress(body)
        headers["HTTP_CONTENT_ENCODING"] = "gzip"
    return client.post(URL, data=body, content_type=content_type, **headers)


def refund_trace(trace: int = 1, session: str = "case-refund-1") -> list[Span]:
    """An agent run: a root with its input and answer, an LLM step, and two tool calls sent out of order."""
    return [
        span(
            trace,
            14,
            1,
            "lookup_order",
            30,
            40,
            a={
                "openinference.span.kind": "TOOL",
                "tool.name": "lookup_order",
                "input.value": '{"order": "A-17"}',
                "output.value": '{"status": "delivered", "total": 40}',
            },
        ),
        span(
            trace,
            1,
            0,
            "agent",
            0,
            100,
            a={
                "openinference.span.kind": "AGENT",
                "session.id": session,
                "input.value": "Refund order A-17, please.",
                "output.value": "I have refunded $40.00 for order A-17.",
            },
        ),
        span(
            trace,
            15,
            1,
            "issue_refund",
            50,
            60,
            a={
                "openinference.span.kind": "TOOL",
                "tool.name": "issue_refund",
                "input.value": '{"order": "A-17", "amount": 40}',
                "output.value": "refund R-9 issued",
            },
        ),
        span(trace, 12, 1, "ChatCompletion", 5, 25, a={"openinference.span.kind": "LLM"}),
    ]


def as_otlp_json(request: ExportTraceServiceRequest) -> bytes:
    """The OTLP/JSON encoding of a request: protobuf's JSON mapping with the ids in hex, as the OTLP specification
    writes them (the Python SDK has no JSON exporter, so its protobuf message is converted this way)."""
    from google.protobuf import json_format

    value = json_format.MessageToDict(request)
    for resource_spans in value.get("resourceSpans", []):
        for scope_spans in resource_spans.get("scopeSpans", []):
            for s in scope_spans.get("spans", []):
                for key in ("traceId", "spanId", "parentSpanId"):
                    if key in s:
                        s[key] = _b64_to_hex(s[key])
    return json.dumps(value).encode()


def _b64_to_hex(text: str) -> str:
    import base64

    return base64.b64decode(text).hex()


def wait_for_outputs(eval_set, n: int) -> None:
    """Wait until the eval set has `n` outputs (a worker finishes its traces in the background)."""
    deadline = time.monotonic() + WITHIN_S
    while time.monotonic() < deadline:
        if Output.objects.filter(case__eval_set=eval_set).count() >= n:
            return
        time.sleep(0.3)
    outcomes = list(TraceOutcome.objects.values_list("trace_id", "status", "reason"))
    raise AssertionError(f"fewer than {n} outputs within {WITHIN_S} s; outcomes {outcomes}")
