"""The gate page's token form sets a traces token's root span name (TraceBinding.root_span_name): the span that
makes a trace an output when it is not the span without a parent."""

from __future__ import annotations

import pytest
from django.urls import reverse

from api.models import GateToken
from evals.models import Output
from formats.models import TraceBinding, TraceOutcome
from formats.otel_traces import ROOT_KINDS, SpanRecord, TraceRules, find_root
from tests.api.test_otel_receiver import finish
from tests.factories import make_eval_set, make_rubric_version
from tests.otel_helpers import export, post, span, traces_token

pytestmark = pytest.mark.django_db


def wrapped_run(trace: int) -> list:
    """A web request span without a parent around the agent's own span, which carries the input and answer."""
    return [
        span(trace, 1, 0, "POST /chat", 0, 300),
        span(
            trace, 2, 1, "support-agent", 20, 270,
            a={"session.id": f"ticket-{trace}", "input.value": "Where is A-17?", "output.value": "It is delivered."},
        ),
        span(trace, 3, 2, "lookup_order", 30, 40, a={"openinference.span.kind": "TOOL", "tool.name": "lookup_order"}),
    ]  # fmt: skip


def form_data(eval_set, **fields) -> dict:
    data = {
        "project": "bot",
        "rubric_version": make_rubric_version().pk,
        "eval_set_pattern": eval_set.name,
        "scopes": ["traces"],
        "trace_eval_set": eval_set.pk,
        "trace_sample_one_in": 1,
    }
    return {**data, **fields}


def test_the_root_span_name_set_on_the_form_decides_which_span_is_the_output(client, lead):
    es = make_eval_set("wrapped-traces")
    token = traces_token(client, lead, es, trace_root_span_name="  support-agent ")

    assert TraceBinding.objects.get().root_span_name == "support-agent"
    post(client, export(wrapped_run(1)).SerializeToString(), token)
    assert finish(es).outputs == 1
    output = Output.objects.get(case__eval_set=es)
    assert (output.case.case_id, output.case.input, output.response) == (
        "ticket-1",
        "Where is A-17?",
        "It is delivered.",
    )
    assert output.latency_ms == 250  # the support-agent span's 20..270 ms, not the request's 300
    assert [c["name"] for c in output.tool_calls] == ["lookup_order"]

    client.force_login(lead)
    page = client.get(reverse("calibration:gates")).content.decode()
    assert "traces into wrapped-traces, root span <code>support-agent</code>" in page


def test_without_a_root_span_name_the_span_without_a_parent_is_the_root(client, lead):
    # The control: the same spans, no name on the form; the request span has no input, so the trace is refused.
    es = make_eval_set("plain-traces")
    token = traces_token(client, lead, es)

    post(client, export(wrapped_run(2)).SerializeToString(), token)

    assert finish(es).rejected == 1
    assert TraceOutcome.objects.get().reason.startswith("the trace gives no input and final response")
    client.force_login(lead)
    assert "root span without a parent" in client.get(reverse("calibration:gates")).content.decode()


def test_the_form_shows_the_root_span_name_and_agent_version_attribute_fields(client, lead):
    client.force_login(lead)
    page = client.get(reverse("calibration:gates")).content.decode()
    assert '<label for="id_trace_root_span_name">Root span name</label>' in page
    assert 'name="trace_root_span_name"' in page
    assert '<label for="id_trace_agent_version_attribute">Version attribute</label>' in page
    assert 'name="trace_agent_version_attribute" value="service.version"' in page


@pytest.mark.parametrize(
    ("attribute", "version"),
    [("deployment.version", "2026-12-02"), ("service.version", "bot-7"), ("", "default")],
)
def test_the_agent_version_attribute_set_on_the_form_names_the_outputs_version(client, lead, attribute, version):
    es = make_eval_set("versioned-traces")
    token = traces_token(
        client, lead, es, trace_agent_version_attribute=attribute, trace_root_span_name="support-agent"
    )
    resource = {"service.name": "bot", "service.version": "bot-7", "deployment.version": "2026-12-02"}

    post(client, export(wrapped_run(3), resource=resource).SerializeToString(), token)

    assert finish(es).outputs == 1
    assert Output.objects.get(case__eval_set=es).agent_version == version


def record(span_id: int, parent: int, name: str, start: int, kind: int = 1, **attributes) -> SpanRecord:
    return SpanRecord(
        trace_id="1" * 32, span_id=f"{span_id:016x}", parent_span_id=f"{parent:016x}" if parent else "", name=name,
        kind=kind, start_ns=start, end_ns=start + 100, status_code=0, attributes=attributes, resource={}, events=[],
    )  # fmt: skip


# SpanKind: 1 INTERNAL, 2 SERVER (opentelemetry-proto's trace.proto).
SPANS = [
    record(1, 0, "POST /chat", 0, kind=2),
    record(2, 1, "router", 10, **{"openinference.span.kind": "CHAIN"}),
    record(3, 2, "support-agent", 20, **{"openinference.span.kind": "AGENT"}),
    record(4, 3, "billing-agent", 30, **{"gen_ai.operation.name": "invoke_agent"}),
    record(5, 3, "support-agent", 40, **{"openinference.span.kind": "LLM"}),
]


@pytest.mark.parametrize(
    ("name", "kind", "root"),
    [
        ("", "", 1),  # no rule: the span without a parent
        ("", "server", 1),
        ("", "chain", 2),
        ("", "agent", 3),  # the first agent span in start order, not the nested one
        ("billing-agent", "agent", 4),  # an agent by GenAI's invoke_agent
        ("support-agent", "", 3),
        ("support-agent", "chain", None),  # no span is both
        ("", "nonesuch", 1),  # unknown kinds never reach here (the form's choices); any span would do
    ],
)
def test_the_root_is_the_first_span_with_the_name_and_of_the_kind_given(name, kind, root):
    found = find_root(SPANS, TraceRules(root_span_name=name, root_span_kind=kind))
    assert (found.span_id if found else None) == (f"{root:016x}" if root else None)


def test_every_kind_the_form_offers_is_one_the_finder_knows():
    assert {k for k, _ in TraceBinding.RootKind.choices if k} == set(ROOT_KINDS)


def test_the_root_span_kind_set_on_the_form_makes_the_agent_span_the_output(client, lead):
    es = make_eval_set("agent-traces")
    token = traces_token(client, lead, es, trace_root_span_kind="agent")
    spans = wrapped_run(5)
    spans[1].attributes.add(key="openinference.span.kind").value.string_value = "AGENT"

    post(client, export(spans).SerializeToString(), token)

    assert TraceBinding.objects.get().root_span_kind == "agent"
    assert finish(es).outputs == 1
    assert Output.objects.get(case__eval_set=es).latency_ms == 250  # the agent span's, not the request's
    client.force_login(lead)
    assert "root span the first of kind agent" in client.get(reverse("calibration:gates")).content.decode()


@pytest.mark.parametrize(
    ("fields", "error"),
    [
        ({"trace_root_span_name": "agent\trun"}, "A span name is printable text"),
        ({"trace_root_span_name": "a" * 201}, "Ensure this value has at most 200 characters (it has 201)."),
        ({"trace_agent_version_attribute": "deployment version"}, "An attribute name is one word"),
        ({"trace_root_span_kind": "tool"}, "Select a valid choice. tool is not one of the available choices."),
        (
            {"trace_root_span_kind": "agent", "scopes": ["push"], "trace_eval_set": ""},
            "Only a token with the traces scope has a root span",
        ),
        (
            {"trace_root_span_name": "agent", "scopes": ["push"], "trace_eval_set": ""},
            "Only a token with the traces scope has a root span",
        ),
    ],
)
def test_a_bad_root_span_name_is_a_clear_error_and_makes_no_token(client, lead, fields, error):
    es = make_eval_set("rc-traces")
    client.force_login(lead)

    refused = client.post(reverse("calibration:create_token"), form_data(es, **fields))

    assert refused.status_code == 422
    assert error in refused.content.decode()
    assert not GateToken.objects.exists() and not TraceBinding.objects.exists()
