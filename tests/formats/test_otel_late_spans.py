"""Late spans: spans that come for a trace already finished (made an output, sampled out or refused) are in no
output. They are counted on the trace (shown on the eval set's page) and, as OTLP's partial success has it, as
rejected spans in the receiver's answer; a span sent again after its trace was finished is neither."""

from __future__ import annotations

import datetime as dt
import json

import pytest
from django.urls import reverse
from django.utils import timezone

from evals.models import Output
from formats.models import TraceBinding, TraceOutcome, TraceSpan
from formats.trace_outputs import finish_ready_traces
from tests.api.test_otel_receiver import response_of
from tests.factories import make_eval_set
from tests.otel_helpers import as_otlp_json, export, post, refund_trace, span, traces_token

pytestmark = pytest.mark.django_db

LATE = "span(s) came after their trace was finished"


def finish_now(eval_set):
    binding = TraceBinding.objects.get(eval_set=eval_set)
    return finish_ready_traces(binding_id=binding.pk, now=timezone.now() + dt.timedelta(seconds=1), quiet_seconds=0)


def finished_trace(client, lead):
    """An eval set with trace 1 (spans 1, 12, 14, 15) made into an output, and the token that sent it."""
    es = make_eval_set("refund-traces")
    token = traces_token(client, lead, es)
    assert post(client, export(refund_trace(trace=1)).SerializeToString(), token).status_code == 200
    assert finish_now(es).outputs == 1
    return es, token


def test_a_span_of_a_finished_trace_is_counted_late_and_answered_as_rejected(client, lead):
    es, token = finished_trace(client, lead)
    late = span(1, 99, 1, "late_tool", 90, 95)  # a new span of trace 1
    resent = refund_trace(trace=1)[3]  # span 12, part of the output
    other = refund_trace(trace=2, session="case-refund-2")  # a new trace, 4 spans

    answer = post(client, export([late, late, resent, *other]).SerializeToString(), token)

    assert answer.status_code == 200
    partial = response_of(answer).partial_success
    assert partial.rejected_spans == 1  # span 99, sent twice in the request: one span
    assert partial.error_message.startswith(f"1 {LATE}")
    outcome = TraceOutcome.objects.get(trace_id=f"{1:032x}")
    assert (outcome.late_spans, outcome.late_span_ids) == (1, [f"{99:016x}"])
    assert TraceSpan.objects.filter(trace_id=f"{2:032x}").count() == 4  # the new trace's spans are all kept
    assert not TraceSpan.objects.filter(trace_id=f"{1:032x}").exists()
    assert Output.objects.filter(case__eval_set=es).count() == 1  # the output is as it was
    assert len(Output.objects.get(case__eval_set=es).metadata["otel"]["spans"]) == 4

    # The late span sent again: still in no output, so rejected again, but the trace counts it once.
    again = response_of(post(client, export([late]).SerializeToString(), token)).partial_success
    assert again.rejected_spans == 1
    outcome.refresh_from_db()
    assert outcome.late_spans == 1

    client.force_login(lead)
    page = client.get(reverse("overview:eval_set", args=[es.pk])).content.decode()
    assert "1 late span: came after its trace was finished, in no output" in page


def test_a_finished_trace_sent_again_is_no_partial_success(client, lead):
    # The negative control: every span was part of the trace when it was finished.
    es, token = finished_trace(client, lead)

    answer = post(client, export(refund_trace(trace=1)).SerializeToString(), token)

    assert answer.status_code == 200 and not response_of(answer).HasField("partial_success")
    assert TraceOutcome.objects.get().late_spans == 0
    client.force_login(lead)
    assert 'id="trace-late-spans"' not in client.get(reverse("overview:eval_set", args=[es.pk])).content.decode()


def test_late_spans_are_answered_in_otlp_json_too(client, lead):
    _, token = finished_trace(client, lead)
    request = export([span(1, 98, 1, "late_a", 90, 95), span(1, 99, 1, "late_b", 91, 96)])

    answer = post(client, as_otlp_json(request), token, content_type="application/json")

    body = json.loads(answer.content)
    assert body["partialSuccess"]["rejectedSpans"] == "2"  # int64 as a string, as OTLP/JSON writes it
    assert body["partialSuccess"]["errorMessage"].startswith(f"2 {LATE}")


def test_spans_staged_while_their_trace_was_being_finished_are_counted_late_by_the_next_finisher(client, lead):
    es, _ = finished_trace(client, lead)
    binding = TraceBinding.objects.get(eval_set=es)
    # What a receiver stages when it read "not finished" just before a finisher committed the trace: one new span
    # and one the trace already had.
    for span_id in (f"{99:016x}", f"{12:016x}"):
        TraceSpan.objects.create(
            binding=binding, trace_id=f"{1:032x}", span_id=span_id, name="x", start_ns=1, end_ns=2,
            received_at=timezone.now() - dt.timedelta(seconds=10),
        )  # fmt: skip

    done = finish_now(es)

    assert (done.outputs, done.rejected, done.sampled_out) == (0, 0, 0)
    assert not TraceSpan.objects.exists()
    assert TraceOutcome.objects.get().late_spans == 1  # span 99; span 12 was in the output


def test_a_sampled_out_trace_counts_its_late_spans_too(client, lead):
    es = make_eval_set("sampled-traces")
    # One in 2 on the trace id's low 64 bits: trace 3 is odd, so sampled out.
    token = traces_token(client, lead, es, trace_sample_one_in=2)
    post(client, export(refund_trace(trace=3)).SerializeToString(), token)
    assert finish_now(es).sampled_out == 1

    partial = response_of(post(client, export([span(3, 99, 1)]).SerializeToString(), token)).partial_success

    assert partial.rejected_spans == 1
    assert TraceOutcome.objects.get().late_spans == 1
