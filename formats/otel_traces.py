"""OpenTelemetry traces as Icewater outputs, without Django: reading an OTLP export request into plain span
records, and making one output of a complete trace (docs/formats.md, "OpenTelemetry").

The attribute names are those of OpenInference (`input.value`, `output.value`, `llm.input_messages.N.message.*`,
`openinference.span.kind`) and of the OpenTelemetry GenAI semantic conventions (`gen_ai.input.messages`,
`gen_ai.output.messages`, the `gen_ai.*.message` and `gen_ai.choice` events, `gen_ai.operation.name`
`execute_tool`). A trace is untrusted data: every value is read as text or JSON, never run.
"""

from __future__ import annotations

import base64
import json
from dataclasses import dataclass, field
from typing import Any

from google.protobuf import json_format
from google.protobuf.message import DecodeError
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
    ExportTraceServiceRequest,
    ExportTraceServiceResponse,
)
from opentelemetry.proto.common.v1.common_pb2 import AnyValue, KeyValue

PROTOBUF = "application/x-protobuf"
JSON = "application/json"

# Where a judge's verdict on a span may be carried: our own attribute, and the GenAI evaluation event's label.
VERDICT_KEYS = ("icewater.judge_verdict", "gen_ai.evaluation.score.label")


# Times are kept as signed 64-bit nanoseconds, as the database's bigint holds them.
LATEST_NS = 2**63


class RequestRefused(Exception):
    """The whole request is refused (HTTP 400): the message says why."""


@dataclass(frozen=True)
class SpanRecord:
    """One span as stored: ids in lower-case hex, attributes as JSON values."""

    trace_id: str
    span_id: str
    parent_span_id: str
    name: str
    kind: int
    start_ns: int
    end_ns: int
    status_code: int
    attributes: dict[str, Any]
    resource: dict[str, Any]
    events: list[dict[str, Any]]


@dataclass
class ReadSpans:
    spans: list[SpanRecord] = field(default_factory=list)
    rejected: int = 0
    reasons: list[str] = field(default_factory=list)

    def refuse(self, reason: str) -> None:
        self.rejected += 1
        if reason not in self.reasons:
            self.reasons.append(reason)


# --- the request -------------------------------------------------------------------------------------------


def parse_protobuf(body: bytes) -> ExportTraceServiceRequest:
    """The export request of an OTLP/HTTP protobuf body; RequestRefused when it cannot be read."""
    request = ExportTraceServiceRequest()
    try:
        request.ParseFromString(body)
    except (DecodeError, RecursionError) as exc:
        raise RequestRefused(f"the body is not an OTLP ExportTraceServiceRequest in protobuf ({exc})") from None
    return request


def parse_json(value: Any) -> ExportTraceServiceRequest:
    """The export request of an OTLP/JSON body, given as the JSON value the API's one reader of JSON bodies made
    of it (api/strict_json.py, NUL kept: a trace's texts are replaced by _no_nul, not its batch refused);
    RequestRefused when it is not one."""
    request = ExportTraceServiceRequest()
    if not isinstance(value, dict):
        raise RequestRefused('an OTLP/JSON body is an object, {"resourceSpans": [...]}')
    try:
        _hex_ids_to_base64(value)
        # Unknown fields are ignored, as the OTLP specification asks of receivers.
        json_format.ParseDict(value, request, ignore_unknown_fields=True)
    except (json_format.ParseError, TypeError, ValueError, AttributeError, RecursionError) as exc:
        raise RequestRefused(f"the body is not an OTLP/JSON ExportTraceServiceRequest ({exc})") from None
    return request


def _hex_ids_to_base64(value: dict) -> None:
    """OTLP/JSON writes trace and span ids in hex where protobuf's JSON mapping expects base64 (the
    specification's one departure from that mapping): convert them in place before parsing."""
    for resource_spans in _list(value, "resourceSpans", "resource_spans"):
        for scope_spans in _list(resource_spans, "scopeSpans", "scope_spans"):
            for span in _list(scope_spans, "spans"):
                _convert_ids(span)
                for link in _list(span, "links"):
                    _convert_ids(link)


def _list(value: Any, *keys: str) -> list:
    if not isinstance(value, dict):
        raise RequestRefused("an OTLP/JSON element that should be an object is not one")
    for key in keys:
        found = value.get(key)
        if found is not None:
            if not isinstance(found, list):
                raise RequestRefused(f"{key} must be a list")
            return found
    return []


def _convert_ids(span: dict) -> None:
    for key, snake in (("traceId", "trace_id"), ("spanId", "span_id"), ("parentSpanId", "parent_span_id")):
        for name in (key, snake):
            hex_id = span.get(name)
            if isinstance(hex_id, str) and hex_id:
                try:
                    span[name] = base64.b64encode(bytes.fromhex(hex_id)).decode()
                except ValueError:
                    raise RequestRefused(f"{key} {hex_id[:40]!r} is not hexadecimal, as OTLP/JSON writes ids") from None


def answer(*, rejected: int, message: str, content_type: str) -> bytes:
    """ExportTraceServiceResponse in the request's encoding; partial_success only when something was refused."""
    response = ExportTraceServiceResponse()
    if rejected or message:
        response.partial_success.rejected_spans = rejected
        response.partial_success.error_message = message
    if content_type == PROTOBUF:
        return response.SerializeToString()
    return json_format.MessageToJson(response, indent=None).encode()


def read_spans(request: ExportTraceServiceRequest, *, max_span_bytes: int) -> ReadSpans:
    """Every span of the request as a record; a span that cannot be kept is counted as rejected, with why."""
    read = ReadSpans()
    for resource_spans in request.resource_spans:
        resource = attributes_dict(resource_spans.resource.attributes)
        for scope_spans in resource_spans.scope_spans:
            for span in scope_spans.spans:
                if len(span.trace_id) != 16 or not any(span.trace_id):
                    read.refuse("a span's trace id is not 16 bytes, or is all zero")
                elif len(span.span_id) != 8 or not any(span.span_id):
                    read.refuse("a span's id is not 8 bytes, or is all zero")
                elif span.ByteSize() > max_span_bytes:
                    read.refuse(f"a span is larger than {max_span_bytes:,} bytes (its attributes and events)")
                elif not span.end_time_unix_nano:
                    read.refuse("a span has no end time (only ended spans are exported)")
                elif max(span.start_time_unix_nano, span.end_time_unix_nano) >= LATEST_NS:
                    read.refuse("a span's start or end time is after the year 2262")
                else:
                    read.spans.append(_record(span, resource))
    return read


def _record(span, resource: dict[str, Any]) -> SpanRecord:
    events = [
        {"name": e.name, "time_ns": e.time_unix_nano, "attributes": attributes_dict(e.attributes)} for e in span.events
    ]
    return SpanRecord(
        trace_id=span.trace_id.hex(),
        span_id=span.span_id.hex(),
        parent_span_id=span.parent_span_id.hex(),
        name=_no_nul(span.name)[:500],
        kind=span.kind,
        start_ns=span.start_time_unix_nano,
        end_ns=span.end_time_unix_nano,
        status_code=span.status.code,
        attributes=attributes_dict(span.attributes),
        resource=resource,
        events=events,
    )


def attributes_dict(attributes: list[KeyValue] | Any) -> dict[str, Any]:
    # A key given twice keeps its last value, as the SDKs do when an attribute is set again.
    return {_no_nul(kv.key): any_value(kv.value) for kv in attributes}


def any_value(value: AnyValue) -> Any:
    which = value.WhichOneof("value")
    if which == "string_value":
        return _no_nul(value.string_value)
    if which == "array_value":
        return [any_value(v) for v in value.array_value.values]
    if which == "kvlist_value":
        return attributes_dict(value.kvlist_value.values)
    if which == "bytes_value":
        return base64.b64encode(value.bytes_value).decode()
    if which is None:
        return None
    return getattr(value, which)


def _no_nul(text: str) -> str:
    # PostgreSQL text and jsonb cannot hold NUL; a trace is untrusted, so replace rather than fail the batch.
    return text.replace("\x00", "\ufffd")


# --- a complete trace ----------------------------------------------------------------------------------------


@dataclass(frozen=True)
class TraceRules:
    """A binding's settings (formats.models.TraceBinding) as plain values."""

    case_id_attribute: str = "session.id"
    agent_version_attribute: str = "service.version"
    root_span_name: str = ""
    root_span_kind: str = ""  # one of ROOT_KINDS, or "" for any
    sample_one_in: int = 1
    keep_attribute: str = ""
    keep_value: str = ""
    keep_judge_fail: bool = True


@dataclass(frozen=True)
class TraceOutput:
    case_id: str
    agent_version: str
    input: str
    response: str
    tool_calls: list[dict[str, Any]]
    latency_ms: int | None
    metadata: dict[str, Any]


class TraceRefused(Exception):
    """This trace makes no output: the message is the reason the lead reads."""


SPAN_KIND_SERVER = 2  # opentelemetry.proto.trace.v1.Span.SpanKind.SPAN_KIND_SERVER
# The kinds a binding may ask its root span to be, each by the conventions' own markers.
ROOT_KINDS = {
    "agent": lambda s: (
        s.attributes.get("openinference.span.kind") == "AGENT"
        or s.attributes.get("gen_ai.operation.name") == "invoke_agent"
    ),
    "chain": lambda s: s.attributes.get("openinference.span.kind") == "CHAIN",
    "server": lambda s: s.kind == SPAN_KIND_SERVER,
}


def find_root(spans: list[SpanRecord], rules: TraceRules) -> SpanRecord | None:
    """The trace's root: the first span (in start order) with the name and of the kind the rules say, when they
    say either; else the span without a parent."""
    ordered = sorted(spans, key=lambda s: (s.start_ns, s.span_id))
    if not rules.root_span_name and not rules.root_span_kind:
        return next((s for s in ordered if not s.parent_span_id), None)
    of_kind = ROOT_KINDS.get(rules.root_span_kind, lambda s: True)
    named = rules.root_span_name
    return next((s for s in ordered if (not named or s.name == named) and of_kind(s)), None)


def keep(spans: list[SpanRecord], trace_id: str, rules: TraceRules) -> bool:
    """Sampling: a trace a rule matches is always kept; the others one in N, deterministically on the trace id
    (its low 64 bits, the part OpenTelemetry's own ratio sampler reads), so a re-sent trace is decided alike."""
    if rules.keep_attribute and any(
        _as_text(s.attributes.get(rules.keep_attribute, s.resource.get(rules.keep_attribute))) == rules.keep_value
        for s in spans
    ):
        return True
    if rules.keep_judge_fail and any(_carries_fail(s) for s in spans):
        return True
    return rules.sample_one_in <= 1 or int(trace_id[-16:], 16) % rules.sample_one_in == 0


def _carries_fail(span: SpanRecord) -> bool:
    places = [span.attributes, *(e["attributes"] for e in span.events)]
    return any(str(p.get(key, "")).upper() == "FAIL" for p in places for key in VERDICT_KEYS)


def _as_text(value: Any) -> str | None:
    if value is None:
        return None
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


def trace_output(spans: list[SpanRecord], trace_id: str, rules: TraceRules) -> TraceOutput:
    """The output a complete trace describes; TraceRefused with the reason when it describes none."""
    root = find_root(spans, rules)
    if root is None:
        named = f" named {rules.root_span_name!r}" if rules.root_span_name else ""
        of_kind = f" of kind {rules.root_span_kind}" if rules.root_span_kind else ""
        raise TraceRefused(f"no root span{named}{of_kind}")
    ordered = sorted(spans, key=lambda s: (s.start_ns, s.span_id))
    inside = [s for s in ordered if s is root or _descends_from(s, root, spans)]
    input_text = _text_attr(root, "input.value") or _first_user_message(inside)
    response = _text_attr(root, "output.value") or _last_assistant_message(inside)
    if not input_text or not response:
        missing = " and ".join(n for n, v in (("input", input_text), ("final response", response)) if not v)
        raise TraceRefused(
            f"the trace gives no {missing}: set input.value/output.value on the root span, or send LLM spans with "
            "llm.input_messages/llm.output_messages (OpenInference) or gen_ai.input.messages/gen_ai.output.messages"
        )
    case_id = _lookup(root, rules.case_id_attribute) if rules.case_id_attribute else None
    version = _lookup(root, rules.agent_version_attribute) if rules.agent_version_attribute else None
    return TraceOutput(
        case_id=_as_text(case_id) or trace_id,
        agent_version=_as_text(version) or "default",
        input=input_text,
        response=response,
        tool_calls=[_tool_call(s) for s in inside if _is_tool(s)],
        latency_ms=max(0, (root.end_ns - root.start_ns) // 1_000_000),
        metadata={"otel": {"trace_id": trace_id, "spans": [_tree_entry(s) for s in ordered]}},
    )


def _descends_from(span: SpanRecord, root: SpanRecord, spans: list[SpanRecord]) -> bool:
    parents = {s.span_id: s.parent_span_id for s in spans}
    seen: set[str] = set()
    current = span.parent_span_id
    while current and current not in seen:
        if current == root.span_id:
            return True
        seen.add(current)
        current = parents.get(current, "")
    return False


def _lookup(root: SpanRecord, key: str) -> Any:
    value = root.attributes.get(key)
    return value if value is not None else root.resource.get(key)


def _text_attr(span: SpanRecord, key: str) -> str:
    value = span.attributes.get(key)
    return value.strip() if isinstance(value, str) else ""


def _is_tool(span: SpanRecord) -> bool:
    kind = span.attributes.get("openinference.span.kind")
    return kind == "TOOL" or span.attributes.get("gen_ai.operation.name") == "execute_tool"


def _json_or_text(value: Any) -> Any:
    if isinstance(value, str):
        try:
            return json.loads(value)
        except ValueError:
            return value
    return value


def _tool_call(span: SpanRecord) -> dict[str, Any]:
    a = span.attributes
    name = a.get("tool.name") or a.get("gen_ai.tool.name") or span.name
    args = next((a[k] for k in ("input.value", "tool.parameters", "gen_ai.tool.call.arguments") if k in a), None)
    result = next((a[k] for k in ("output.value", "gen_ai.tool.call.result") if k in a), None)
    return {"name": str(name), "args": _json_or_text(args), "response": _json_or_text(result)}


def _messages(span: SpanRecord, prefix: str, genai_key: str) -> list[tuple[str, str]]:
    """(role, text) of a span's messages: OpenInference's flattened `prefix.N.message.*`, else the GenAI
    convention's JSON attribute."""
    found: dict[int, dict[str, str]] = {}
    for key, value in span.attributes.items():
        if not key.startswith(prefix + "."):
            continue
        index, _, rest = key[len(prefix) + 1 :].partition(".")
        if index.isdigit() and rest in ("message.role", "message.content") and isinstance(value, str):
            found.setdefault(int(index), {})[rest.removeprefix("message.")] = value
    if found:
        return [(m.get("role", ""), m.get("content", "")) for _, m in sorted(found.items())]
    value = _json_or_text(span.attributes.get(genai_key))
    out: list[tuple[str, str]] = []
    if isinstance(value, list):
        for m in value:
            if isinstance(m, dict):
                out.append((str(m.get("role", "")), _genai_text(m)))
    return out


def _genai_text(message: dict) -> str:
    if isinstance(message.get("content"), str):
        return message["content"]
    parts = message.get("parts")
    if isinstance(parts, list):
        return "\n".join(p["content"] for p in parts if isinstance(p, dict) and isinstance(p.get("content"), str))
    return ""


def _event_texts(span: SpanRecord, names: tuple[str, ...]) -> list[str]:
    texts = []
    for event in span.events:
        if event["name"] in names:
            a = event["attributes"]
            content = a.get("content") or a.get("gen_ai.prompt") or a.get("gen_ai.completion")
            if content is None and isinstance(a.get("message"), dict):
                content = a["message"].get("content")
            if isinstance(content, str) and content.strip():
                texts.append(content)
    return texts


def _first_user_message(spans: list[SpanRecord]) -> str:
    for span in spans:
        users = [t for role, t in _messages(span, "llm.input_messages", "gen_ai.input.messages") if role == "user"]
        users += _event_texts(span, ("gen_ai.user.message", "gen_ai.content.prompt"))
        prompt = span.attributes.get("gen_ai.prompt")
        if isinstance(prompt, str):
            users.append(prompt)
        for text in users:
            if text.strip():
                return text.strip()
    return ""


def _last_assistant_message(spans: list[SpanRecord]) -> str:
    for span in sorted(spans, key=lambda s: (s.end_ns, s.span_id), reverse=True):
        answers = [t for _, t in _messages(span, "llm.output_messages", "gen_ai.output.messages")]
        answers += _event_texts(span, ("gen_ai.choice", "gen_ai.content.completion"))
        completion = span.attributes.get("gen_ai.completion")
        if isinstance(completion, str):
            answers.append(completion)
        for text in reversed(answers):
            if text.strip():
                return text.strip()
    return ""


def _tree_entry(span: SpanRecord) -> dict[str, Any]:
    return {
        "span_id": span.span_id,
        "parent_span_id": span.parent_span_id,
        "name": span.name,
        "kind": span.kind,
        "start_ns": span.start_ns,
        "end_ns": span.end_ns,
        "status_code": span.status_code,
        "attributes": span.attributes,
        "events": span.events,
    }
