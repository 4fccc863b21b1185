"""The OTLP/HTTP traces receiver (POST /api/otlp/v1/traces) and how received spans become outputs; export requests
are built with opentelemetry-proto's classes (tests/otel_helpers.py). The real SDK and an instrumented openai client
against a live server: tests/api/test_otel_sdk.py."""

from __future__ import annotations

import datetime as dt
import gzip
import json

import pytest
from django.urls import reverse
from django.utils import timezone
from google.protobuf import json_format
from google.rpc.status_pb2 import Status
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceResponse

from api.models import GateToken, TokenScope, hash_token
from evals.models import Output
from formats.models import TraceBinding, TraceOutcome, TraceSpan
from formats.trace_outputs import finish_ready_traces
from tests.api_helpers import call, create_token
from tests.factories import default_workspace, make_eval_set, make_rubric_version
from tests.otel_helpers import as_otlp_json, export, post, refund_trace, span, traces_token

pytestmark = pytest.mark.django_db


def finish(eval_set, *, later_s: float = 0, quiet: float | None = 0):
    binding = TraceBinding.objects.get(eval_set=eval_set)
    return finish_ready_traces(
        binding_id=binding.pk, now=timezone.now() + dt.timedelta(seconds=later_s), quiet_seconds=quiet
    )


def response_of(answer) -> ExportTraceServiceResponse:
    message = ExportTraceServiceResponse()
    message.ParseFromString(answer.content)
    return message


def test_a_protobuf_export_becomes_an_output_with_its_tool_calls_in_start_order(client, lead):
    es = make_eval_set("refund-traces")
    token = traces_token(client, lead, es)

    answer = post(client, export(refund_trace()).SerializeToString(), token)

    assert answer.status_code == 200 and answer["Content-Type"] == "application/x-protobuf"
    assert not response_of(answer).HasField("partial_success")
    assert TraceSpan.objects.count() == 4
    assert finish(es).outputs == 1
    output = Output.objects.get(case__eval_set=es)
    assert output.case.case_id == "case-refund-1"  # session.id, as the binding names it
    assert output.case.input == "Refund order A-17, please."
    assert output.response == "I have refunded $40.00 for order A-17."
    assert output.agent_version == "bot-1.4"  # the resource's service.version
    assert output.tool_calls == [
        {"name": "lookup_order", "args": {"order": "A-17"}, "response": {"status": "delivered", "total": 40}},
        {"name": "issue_refund", "args": {"order": "A-17", "amount": 40}, "response": "refund R-9 issued"},
    ]
    assert output.latency_ms == 100
    tree = output.metadata["otel"]
    assert tree["trace_id"] == "00000000000000000000000000000001"
    assert [s["name"] for s in tree["spans"]] == ["agent", "ChatCompletion", "lookup_order", "issue_refund"]
    assert TraceSpan.objects.count() == 0  # the staging rows go once the trace is decided


def test_spans_in_any_order_across_batches_and_sent_twice_make_one_output(client, lead):
    es = make_eval_set("refund-traces")
    token = traces_token(client, lead, es)
    spans = refund_trace()

    for batch in ([spans[3], spans[0]], [spans[2]], [spans[0], spans[1]], [spans[2]]):
        assert post(client, export(batch).SerializeToString(), token).status_code == 200
    assert TraceSpan.objects.count() == 4  # each span stored once
    assert finish(es).outputs == 1
    # The whole trace again, after it became an output: nothing changes, nothing waits.
    assert post(client, export(spans).SerializeToString(), token).status_code == 200
    assert TraceSpan.objects.count() == 0
    assert finish(es).outputs == 0
    assert Output.objects.filter(case__eval_set=es).count() == 1
    assert TraceOutcome.objects.get().status == TraceOutcome.Status.OUTPUT


def test_a_trace_waits_for_its_quiet_period_and_for_its_root(client, lead):
    es = make_eval_set("refund-traces")
    token = traces_token(client, lead, es)
    root, children = refund_trace()[1], [s for s in refund_trace() if s.name != "agent"]

    post(client, export(children).SerializeToString(), token)
    assert finish(es, later_s=60, quiet=5).waiting == 1  # quiet, but its root is not there
    post(client, export([root]).SerializeToString(), token)
    assert finish(es, later_s=4, quiet=5).outputs == 0  # the root came 4 s ago: not yet quiet
    assert finish(es, later_s=6, quiet=5).outputs == 1
    assert Output.objects.filter(case__eval_set=es).count() == 1


def test_a_trace_whose_root_never_comes_is_refused_after_the_rootless_period(client, lead, settings):
    settings.ICEWATER_OTLP_ROOTLESS_SECONDS = 600
    es = make_eval_set("refund-traces")
    token = traces_token(client, lead, es)
    post(client, export(refund_trace()[2:]).SerializeToString(), token)

    assert finish(es, later_s=599).waiting == 1
    assert finish(es, later_s=601).rejected == 1
    assert TraceOutcome.objects.get().reason.startswith("no root span")


def test_otlp_json_with_hex_ids_is_read_and_answered_in_json(client, lead):
    es = make_eval_set("refund-traces")
    token = traces_token(client, lead, es, trace_case_id_attribute="")
    # Written by hand as the OTLP specification's JSON example writes a span: hex ids, the kind as a number,
    # times (int64) as strings.
    body = {
        "resourceSpans": [
            {
                "resource": {"attributes": [{"key": "service.version", "value": {"stringValue": "bot-2"}}]},
                "scopeSpans": [
                    {
                        "spans": [
                            {
                                "traceId": "5b8efff798038103d269b633813fc60c",
                                "spanId": "eee19b7ec3c1b174",
                                "name": "agent",
                                "kind": 2,
                                "startTimeUnixNano": "1544712660000000000",
                                "endTimeUnixNano": "1544712661000000000",
                                "attributes": [
                                    {"key": "input.value", "value": {"stringValue": "Where is my parcel?"}},
                                    {"key": "output.value", "value": {"stringValue": "It arrives on Monday."}},
                                ],
                                "unknownFieldFromANewerSpec": True,
                            }
                        ]
                    }
                ],
            }
        ]
    }

    answer = post(client, json.dumps(body).encode(), token, content_type="application/json")

    assert answer.status_code == 200 and answer["Content-Type"] == "application/json"
    assert json.loads(answer.content) == {}  # an ExportTraceServiceResponse with nothing refused
    assert finish(es).outputs == 1
    output = Output.objects.get(case__eval_set=es)
    assert output.case.case_id == "5b8efff798038103d269b633813fc60c"  # no case id attribute: the trace id
    assert (output.agent_version, output.response, output.latency_ms) == ("bot-2", "It arrives on Monday.", 1000)


def test_the_json_encoding_of_the_same_request_makes_the_same_output(client, lead):
    es_proto, es_json = make_eval_set("by-protobuf"), make_eval_set("by-json")
    post(client, export(refund_trace()).SerializeToString(), traces_token(client, lead, es_proto))
    post(client, as_otlp_json(export(refund_trace())), traces_token(client, lead, es_json), "application/json")
    finish(es_proto), finish(es_json)
    a, b = Output.objects.get(case__eval_set=es_proto), Output.objects.get(case__eval_set=es_json)
    assert (a.case.input, a.response, a.tool_calls, a.metadata) == (b.case.input, b.response, b.tool_calls, b.metadata)


def test_spans_that_cannot_be_kept_are_counted_as_rejected_and_the_others_kept(client, lead, settings):
    settings.ICEWATER_OTLP_MAX_SPAN_BYTES = 2048
    es = make_eval_set("refund-traces")
    token = traces_token(client, lead, es)
    bad_id = span(1, 0, 1, "no id")  # a span id of zero
    huge = span(1, 20, 1, "huge", a={"input.value": "x" * 5000})
    request = export([*refund_trace(), bad_id, huge])

    answer = post(client, request.SerializeToString(), token)

    assert answer.status_code == 200
    partial = response_of(answer).partial_success
    assert partial.rejected_spans == 2
    assert "all zero" in partial.error_message and "larger than 2,048 bytes" in partial.error_message
    assert TraceSpan.objects.count() == 4
    # In JSON the count is an int64, so a string.
    answer = post(client, as_otlp_json(request), token, content_type="application/json")
    assert json.loads(answer.content)["partialSuccess"]["rejectedSpans"] == "2"


def test_a_trace_without_input_or_response_is_refused_with_its_reason_on_the_eval_set_page(client, lead):
    es = make_eval_set("refund-traces")
    token = traces_token(client, lead, es)
    post(client, export([span(7, 1, 0, "agent"), span(7, 2, 1, "step")]).SerializeToString(), token)

    assert finish(es).rejected == 1
    assert not Output.objects.filter(case__eval_set=es).exists()
    assert TraceSpan.objects.count() == 0
    client.force_login(lead)
    page = client.get(reverse("overview:eval_set", args=[es.pk])).content.decode()
    assert "1 refused" in page and "the trace gives no input and final response" in page


def test_the_eval_set_page_says_nothing_of_traces_without_a_traces_token(client, lead):
    es = make_eval_set("plain")
    client.force_login(lead)
    assert 'id="trace-summary"' not in client.get(reverse("overview:eval_set", args=[es.pk])).content.decode()


def test_genai_semantic_convention_attributes_make_an_output(client, lead):
    es = make_eval_set("genai-traces")
    token = traces_token(client, lead, es)
    messages_in = [
        {"role": "system", "parts": [{"type": "text", "content": "Be brief."}]},
        {"role": "user", "parts": [{"type": "text", "content": "Cancel my plan."}]},
    ]
    messages_out = [{"role": "assistant", "parts": [{"type": "text", "content": "Your plan is cancelled."}]}]
    spans = [
        span(3, 1, 0, "invoke_agent", 0, 90, a={"gen_ai.operation.name": "invoke_agent", "session.id": "c-9"}),
        span(3, 2, 1, "chat", 1, 20, a={"gen_ai.input.messages": json.dumps(messages_in[:2])}),
        span(
            3,
            3,
            1,
            "execute_tool cancel",
            21,
            30,
            a={
                "gen_ai.operation.name": "execute_tool",
                "gen_ai.tool.name": "cancel",
                "gen_ai.tool.call.arguments": '{"plan": "pro"}',
                "gen_ai.tool.call.result": '{"ok": true}',
            },
        ),
        span(3, 4, 1, "chat", 31, 80, a={"gen_ai.output.messages": json.dumps(messages_out)}),
    ]
    post(client, export(spans).SerializeToString(), token)

    finish(es)
    output = Output.objects.get(case__eval_set=es)
    assert (output.case.case_id, output.case.input) == ("c-9", "Cancel my plan.")
    assert output.response == "Your plan is cancelled."
    assert output.tool_calls == [{"name": "cancel", "args": {"plan": "pro"}, "response": {"ok": True}}]


def test_sampling_keeps_one_in_n_on_the_trace_id_and_whatever_a_rule_keeps(client, lead):
    es = make_eval_set("sampled")
    token = traces_token(client, lead, es, trace_sample_one_in=4, trace_keep_rule="user.tier=enterprise")

    def trace(number: int, **extra) -> list:
        a = {"session.id": f"s-{number}", "input.value": "hi", "output.value": "hello", **extra}
        return [span(number, 1, 0, "agent", a=a)]

    # Trace ids 8 and 12 are multiples of 4 (kept); 9 and 10 are not, but a rule keeps them; 11 is dropped.
    spans = [*trace(8), *trace(12), *trace(9, **{"user.tier": "enterprise"}), *trace(11)]
    spans += trace(10, **{"icewater.judge_verdict": "FAIL"})
    post(client, export(spans).SerializeToString(), token)

    done = finish(es)
    assert (done.outputs, done.sampled_out) == (4, 1)
    kept = set(Output.objects.filter(case__eval_set=es).values_list("case__case_id", flat=True))
    assert kept == {"s-8", "s-12", "s-9", "s-10"}
    assert TraceOutcome.objects.get(status=TraceOutcome.Status.SAMPLED_OUT).trace_id.endswith("b")  # 11


def test_a_second_trace_for_the_same_case_and_agent_version_is_refused_not_overwritten(client, lead):
    es = make_eval_set("refund-traces")
    token = traces_token(client, lead, es)
    post(client, export(refund_trace(trace=1)).SerializeToString(), token)
    finish(es)
    post(client, export(refund_trace(trace=2)).SerializeToString(), token)

    assert finish(es).rejected == 1
    assert "already has an output of agent version 'bot-1.4'" in TraceOutcome.objects.get(trace_id__endswith="2").reason
    assert Output.objects.filter(case__eval_set=es).count() == 1


# --- bad input ----------------------------------------------------------------------------------------------


def status_of(answer) -> Status:
    message = Status()
    message.ParseFromString(answer.content)
    return message


def test_a_malformed_protobuf_body_is_a_400_with_a_status_and_nothing_is_stored(client, lead):
    es = make_eval_set("refund-traces")
    token = traces_token(client, lead, es)
    answer = post(client, b"\x0a\xff\xff\xff\xff\x0f garbage", token)
    assert answer.status_code == 400
    assert "not an OTLP ExportTraceServiceRequest" in status_of(answer).message
    assert not TraceSpan.objects.exists()


@pytest.mark.parametrize(
    "body",
    [
        b"{not json",
        b"[1, 2]",
        b'{"resourceSpans": [{"scopeSpans": [{"spans": [{"traceId": "zz"}]}]}]}',
        b'{"resourceSpans": "many"}',
    ],
)
def test_a_malformed_json_body_is_a_400_in_json(client, lead, body):
    token = traces_token(client, lead, make_eval_set("refund-traces"))
    answer = post(client, body, token, content_type="application/json")
    assert answer.status_code == 400 and answer["Content-Type"] == "application/json"
    assert json.loads(answer.content)["message"]
    assert not TraceSpan.objects.exists()


# OTLP/JSON is read by the one reader of the API's JSON bodies (api/strict_json.py): a key twice and nesting
# deeper than 64 are refused in its words, not kept last (json.loads) or left to a RecursionError.
TWICE = (
    "this key appears twice in the same object; most readers would silently keep only the last value, so write it once"
)
TOO_DEEP = (
    "is nested more than 64 levels deep (objects and lists inside each other); Icewater reads at most 64 levels: "
    "flatten it"
)


def one_span_json(output_value: str) -> bytes:
    """OTLP/JSON of one finished agent span, written by hand so that a key can be written twice: `output_value` is
    the JSON text of its output.value attribute's value."""
    return (
        '{"resourceSpans": [{"resource": {"attributes": '
        '[{"key": "service.version", "value": {"stringValue": "bot-2"}}]},'
        ' "scopeSpans": [{"spans": [{"traceId": "5b8efff798038103d269b633813fc60c", "spanId": "eee19b7ec3c1b174",'
        ' "name": "agent", "kind": 2, "startTimeUnixNano": "1544712660000000000",'
        ' "endTimeUnixNano": "1544712661000000000", "attributes": ['
        '{"key": "input.value", "value": {"stringValue": "Can I get my money back?"}}, '
        '{"key": "output.value", "value": ' + output_value + "}]}]}]}]}"
    ).encode()


def test_an_otlp_json_attribute_with_a_key_twice_is_refused_not_stored_as_the_last(client, lead):
    # Before: 200, and the output's response was "SECOND-refund denied".
    es = make_eval_set("refund-traces")
    token = traces_token(client, lead, es, trace_case_id_attribute="")
    twice = one_span_json('{"stringValue": "FIRST-refund approved", "stringValue": "SECOND-refund denied"}')
    answer = post(client, twice, token, content_type="application/json")
    assert answer.status_code == 400 and answer["Content-Type"] == "application/json"
    # The path is shown to six steps, as in every other body's message (evals.record_fields.format_path).
    assert json.loads(answer.content) == {
        "code": 3,
        "message": f'the body was refused: body, field "resourceSpans[0].scopeSpans[0].spans[0]...": {TWICE}',
    }
    assert not TraceSpan.objects.exists()
    # The negative control: the same span with the value once is taken.
    once = one_span_json('{"stringValue": "SECOND-refund denied"}')
    assert post(client, once, token, content_type="application/json").status_code == 200
    assert finish(es).outputs == 1
    assert Output.objects.get(case__eval_set=es).response == "SECOND-refund denied"


def test_a_top_level_key_twice_is_refused_in_the_words_of_every_other_api_body(client, lead):
    es = make_eval_set("refund-traces")
    span_list = '[{"scopeSpans": [{"spans": []}]}]'
    body = '{"resourceSpans": ' + span_list + ', "resourceSpans": ' + span_list + "}"
    answer = post(client, body.encode(), traces_token(client, lead, es), content_type="application/json")
    problem = f'body, field "resourceSpans": {TWICE}'
    assert answer.status_code == 400
    assert json.loads(answer.content) == {"code": 3, "message": f"the body was refused: {problem}"}
    assert not TraceSpan.objects.exists()
    # The same body pushed as records is refused with the same problem (docs/api.md, Errors).
    push = create_token(client, lead, ["push"], make_rubric_version("other"), pattern="refund-*")
    pushed = call(client, "POST", "/api/outputs", push, body, eval_set="refund-traces")
    assert pushed.status_code == 400 and pushed.json()["problems"][0]["text"] == problem


@pytest.mark.parametrize("gzipped", [False, True])
def test_an_otlp_json_body_nested_3000_deep_is_refused_by_the_64_level_rule(client, lead, gzipped):
    # Before: 400 "the body is not JSON (maximum recursion depth exceeded ...)", Python's limit, not ours.
    token = traces_token(client, lead, make_eval_set("refund-traces"))
    body = ('{"resourceSpans": ' + "[" * 3000 + "]" * 3000 + "}").encode()
    answer = post(client, body, token, content_type="application/json", gzipped=gzipped)
    assert answer.status_code == 400 and answer["Content-Type"] == "application/json"
    assert json.loads(answer.content) == {
        "code": 3,
        "message": f'the body was refused: body, field "resourceSpans[0][0][0][0][0]...": {TOO_DEEP}',
    }
    assert not TraceSpan.objects.exists()


def test_the_protobuf_encoding_of_a_refused_json_body_still_answers_protobuf(client, lead):
    # The strict reader is for the JSON encoding only: protobuf has no keys to repeat (a field sent twice is
    # protobuf's merge, as every OTLP receiver reads it), and its errors stay a google.rpc.Status in protobuf.
    es = make_eval_set("refund-traces")
    token = traces_token(client, lead, es)
    assert post(client, export(refund_trace()).SerializeToString(), token).status_code == 200
    refused = post(client, b'{"resourceSpans": [], "resourceSpans": []}', token)  # JSON sent as protobuf
    assert refused.status_code == 400 and refused["Content-Type"] == "application/x-protobuf"
    assert "not an OTLP ExportTraceServiceRequest in protobuf" in status_of(refused).message


def test_a_nul_in_otlp_json_is_replaced_as_in_protobuf_not_refused(client, lead):
    # A guard that passes before and after: the strict reader refuses NUL in other bodies, but a trace is
    # replaced, not refused, in either encoding (formats/otel_traces._no_nul): an exporter does not resend a
    # refused batch. Reading OTLP/JSON with parse_json_body's NUL rule fails this test.
    es = make_eval_set("refund-traces")
    token = traces_token(client, lead, es, trace_case_id_attribute="")
    body = one_span_json('{"stringValue": "refund\\u0000denied"}')
    assert post(client, body, token, content_type="application/json").status_code == 200
    finish(es)
    assert Output.objects.get(case__eval_set=es).response == "refund\ufffddenied"


def test_another_content_type_or_encoding_is_a_415(client, lead):
    token = traces_token(client, lead, make_eval_set("refund-traces"))
    body = export(refund_trace()).SerializeToString()
    assert post(client, body, token, content_type="text/plain").status_code == 415
    assert post(client, body, token, HTTP_CONTENT_ENCODING="br").status_code == 415
    assert post(client, body, token).status_code == 200  # the control: the same body, as protobuf


def test_a_gzip_body_is_read_and_a_gzip_bomb_is_a_413_without_writing(client, lead, settings):
    settings.ICEWATER_UPLOAD_MAX_BYTES = 64 * 1024
    es = make_eval_set("refund-traces")
    token = traces_token(client, lead, es)
    assert post(client, export(refund_trace()).SerializeToString(), token, gzipped=True).status_code == 200
    assert TraceSpan.objects.count() == 4

    bomb = gzip.compress(b"\x00" * (50 * 1024 * 1024))  # 50 MB of zeros in about 50 KB
    assert len(bomb) < settings.ICEWATER_UPLOAD_MAX_BYTES
    answer = client.post(
        "/api/otlp/v1/traces",
        data=bomb,
        content_type="application/x-protobuf",
        HTTP_AUTHORIZATION=f"Bearer {token}",
        HTTP_CONTENT_ENCODING="gzip",
    )
    assert answer.status_code == 413 and "65,536 bytes" in status_of(answer).message
    assert TraceSpan.objects.count() == 4

    truncated = gzip.compress(export(refund_trace(trace=5)).SerializeToString())[:-12]
    assert post(client, truncated, token, HTTP_CONTENT_ENCODING="gzip").status_code == 400


def test_a_body_over_the_upload_limit_is_a_413(client, lead, settings):
    settings.ICEWATER_UPLOAD_MAX_BYTES = 1024
    token = traces_token(client, lead, make_eval_set("refund-traces"))
    many = export([s for n in range(1, 20) for s in refund_trace(trace=n)]).SerializeToString()
    assert len(many) > 1024
    assert post(client, many, token).status_code == 413
    assert not TraceSpan.objects.exists()


def test_no_token_a_wrong_token_or_one_without_the_traces_scope_is_refused(client, lead):
    es = make_eval_set("refund-traces")
    body = export(refund_trace()).SerializeToString()
    assert post(client, body, None).status_code == 401
    assert post(client, body, "icw_not-a-token").status_code == 401
    push = create_token(client, lead, ["push"], make_rubric_version(), pattern=es.name)
    answer = post(client, body, push)
    assert answer.status_code == 403 and "may not send traces" in status_of(answer).message
    # A traces scope without a bound eval set (not something the page makes): refused as well.
    GateToken.objects.create(
        workspace=default_workspace(),
        project="p",
        rubric_version=make_rubric_version(),
        scopes=[TokenScope.TRACES],
        token_hash=hash_token("icw_x"),
        hint="icw_x",
        created_by=lead,
    )
    assert post(client, body, "icw_x").status_code == 403
    assert not TraceSpan.objects.exists()
    # The x-icewater-token header works like Authorization.
    token = traces_token(client, lead, es)
    assert post(client, body, None, HTTP_X_ICEWATER_TOKEN=token).status_code == 200


def test_a_token_sends_traces_only_into_its_own_eval_set(client, lead):
    mine, other = make_eval_set("mine"), make_eval_set("other")
    token = traces_token(client, lead, mine)
    traces_token(client, lead, other)
    post(client, export(refund_trace()).SerializeToString(), token)
    finish(mine), finish(other)
    assert Output.objects.filter(case__eval_set=mine).count() == 1
    assert not Output.objects.filter(case__eval_set=other).exists()


def test_too_many_waiting_spans_is_a_429_with_retry_after(client, lead, settings):
    settings.ICEWATER_OTLP_MAX_WAITING_SPANS = 4
    es = make_eval_set("refund-traces")
    token = traces_token(client, lead, es)
    assert post(client, export(refund_trace(trace=1)).SerializeToString(), token).status_code == 200
    answer = post(client, export(refund_trace(trace=2)).SerializeToString(), token)
    assert answer.status_code == 429 and answer["Retry-After"] == "30"
    finish(es)
    assert post(client, export(refund_trace(trace=2)).SerializeToString(), token).status_code == 200


def test_the_token_form_binds_a_traces_token_to_one_eval_set_that_its_pattern_matches(client, lead):
    es = make_eval_set("rc-traces")
    client.force_login(lead)
    data = {
        "project": "bot",
        "rubric_version": make_rubric_version().pk,
        "eval_set_pattern": "rc-*",
        "scopes": ["traces"],
        "trace_sample_one_in": 1,
    }
    refused = client.post(reverse("calibration:create_token"), data)
    assert refused.status_code == 422 and "sends its traces into one eval set" in refused.content.decode()
    other = make_eval_set("prod-traces")
    refused = client.post(reverse("calibration:create_token"), {**data, "trace_eval_set": other.pk})
    assert refused.status_code == 422 and "does not match" in refused.content.decode()
    refused = client.post(reverse("calibration:create_token"), {**data, "trace_eval_set": es.pk, "scopes": ["push"]})
    assert refused.status_code == 422 and "Only a token with the traces scope" in refused.content.decode()
    assert not TraceBinding.objects.exists()

    made = client.post(
        reverse("calibration:create_token"), {**data, "trace_eval_set": es.pk, "trace_keep_rule": "tier = gold"}
    )
    assert made.status_code == 200
    binding = GateToken.objects.get().trace_binding
    assert (binding.eval_set, binding.keep_attribute, binding.keep_value) == (es, "tier", "gold")
    page = made.content.decode()
    assert "OTEL_EXPORTER_OTLP_HEADERS=" in page and "/api/otlp/v1/traces" in page
    assert "traces into rc-traces" in page


def test_only_a_lead_makes_a_traces_token(client, reviewer):
    es = make_eval_set("rc-traces")
    client.force_login(reviewer)
    data = {
        "project": "bot",
        "rubric_version": make_rubric_version().pk,
        "eval_set_pattern": "*",
        "scopes": ["traces"],
        "trace_eval_set": es.pk,
    }
    assert client.post(reverse("calibration:create_token"), data).status_code == 403
    assert not TraceBinding.objects.exists()


def test_the_receiver_takes_only_post(client):
    assert client.get("/api/otlp/v1/traces").status_code == 405


def test_json_format_reads_what_the_receiver_answers(client, lead):
    # The reference parser of the JSON mapping reads our JSON answer as an ExportTraceServiceResponse.
    token = traces_token(client, lead, make_eval_set("refund-traces"))
    answer = post(client, as_otlp_json(export([span(1, 0)])), token, content_type="application/json")
    parsed = json_format.Parse(answer.content, ExportTraceServiceResponse())
    assert parsed.partial_success.rejected_spans == 1


def test_the_copy_path_and_the_portable_path_stage_the_same_rows_and_both_ignore_a_re_sent_span(client, lead):
    from formats.otel_traces import read_spans
    from formats.trace_outputs import store_spans

    read = read_spans(export(refund_trace()), max_span_bytes=10**6)
    staged = {}
    for copy in (True, False):
        binding = TraceBinding.objects.create(eval_set=make_eval_set())
        store_spans(binding=binding, spans=read.spans, copy=copy)
        store_spans(binding=binding, spans=read.spans[:2], copy=copy)  # re-sent: nothing more
        rows = TraceSpan.objects.filter(binding=binding).order_by("span_id")
        staged[copy] = [
            (r.trace_id, r.span_id, r.parent_span_id, r.name, r.start_ns, r.end_ns, r.attributes, r.resource, r.events)
            for r in rows
        ]
    assert len(staged[True]) == 4
    assert staged[True] == staged[False]
    assert staged[True][0][:4] == ("00000000000000000000000000000001", "0000000000000001", "", "agent")


def test_two_traces_of_one_case_in_one_batch_make_one_output_and_one_refusal(client, lead):
    es = make_eval_set("refund-traces")
    token = traces_token(client, lead, es)
    other_input = refund_trace(trace=3)
    other_input[1].attributes[2].value.string_value = "Refund order B-2."  # input.value of the root
    post(client, export([*refund_trace(trace=1), *refund_trace(trace=2), *other_input]).SerializeToString(), token)

    done = finish(es)

    assert (done.outputs, done.rejected) == (1, 2)
    reasons = sorted(TraceOutcome.objects.exclude(reason="").values_list("reason", flat=True))
    assert reasons == [
        "case 'case-refund-1' already exists in refund-traces with another input",
        "case 'case-refund-1' already has an output of agent version 'bot-1.4'; name another case id or agent version",
    ]
    assert Output.objects.get(case__eval_set=es).metadata["otel"]["trace_id"].endswith("1")


@pytest.mark.django_db(transaction=True)
def test_a_table_locked_by_another_session_is_a_503_with_retry_after_and_nothing_written(client, lead):
    import psycopg

    from tests.services import database_url

    es = make_eval_set("refund-traces")
    token = traces_token(client, lead, es)
    with psycopg.connect(database_url()) as other:  # e.g. a migration holding the table
        other.execute(f"LOCK TABLE {TraceSpan._meta.db_table} IN ACCESS EXCLUSIVE MODE")
        answer = post(client, export(refund_trace()).SerializeToString(), token)
        other.rollback()
    assert answer.status_code == 503 and answer["Retry-After"] == "5"
    assert "cannot take spans right now" in status_of(answer).message
    assert not TraceSpan.objects.exists()
    assert post(client, export(refund_trace()).SerializeToString(), token).status_code == 200  # once it is free


def test_the_finish_traces_command_finishes_what_no_worker_did(client, lead):
    from io import StringIO

    from django.core.management import call_command

    es = make_eval_set("refund-traces")
    post(client, export(refund_trace()).SerializeToString(), traces_token(client, lead, es))
    out = StringIO()
    call_command("finish_traces", stdout=out)  # the quiet period (5 s) has not passed: nothing yet
    assert not Output.objects.filter(case__eval_set=es).exists()
    call_command("finish_traces", "--now", stdout=out)
    assert Output.objects.filter(case__eval_set=es).count() == 1
    assert out.getvalue().splitlines()[-1] == (
        "refund-traces: 1 output(s) made, 0 trace(s) sampled out, 0 refused, 0 waiting for their root span"
    )
