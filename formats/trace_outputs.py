"""Received OpenTelemetry spans in the database: staged as they arrive, and each complete trace made into an
output (or sampled out, or refused with a reason) in one transaction (docs/formats.md, "OpenTelemetry").

A trace is complete once its root span is there and no span of it has arrived for
settings.ICEWATER_OTLP_QUIET_SECONDS: spans come in any order and across export batches, and a span's
arrival is what tells us the trace is still going. A trace whose root never comes is refused after
settings.ICEWATER_OTLP_ROOTLESS_SECONDS.
"""

from __future__ import annotations

import datetime as dt
from collections import Counter, defaultdict
from dataclasses import dataclass

from django.conf import settings
from django.db import IntegrityError, transaction
from django.db.models import Count, Max
from django.utils import timezone

from evals import record_fields as f
from evals.models import Case, EvalSet, Output
from evals.problems import RecordError

from .case_records import AGENT_VERSION_MAX, CASE_ID_MAX
from .models import TraceBinding, TraceOutcome, TraceSpan
from .otel_traces import SpanRecord, TraceRefused, TraceRules, find_root, keep, trace_output

REASON_MAX = 500  # TraceOutcome.reason


def rules_of(binding: TraceBinding) -> TraceRules:
    return TraceRules(
        case_id_attribute=binding.case_id_attribute,
        agent_version_attribute=binding.agent_version_attribute,
        root_span_name=binding.root_span_name,
        sample_one_in=binding.sample_one_in,
        keep_attribute=binding.keep_attribute,
        keep_value=binding.keep_value,
        keep_judge_fail=binding.keep_judge_fail,
    )


def waiting_spans(binding_id: int) -> int:
    return TraceSpan.objects.filter(binding_id=binding_id).count()


def has_waiting_spans(binding_id: int) -> bool:
    return TraceSpan.objects.filter(binding_id=binding_id).exists()


def store_spans(*, binding: TraceBinding, spans: list[SpanRecord]) -> int:
    """Stage the spans; a span already staged, or of a trace already finished, changes nothing. Returns how
    many spans were new."""
    finished = set(
        TraceOutcome.objects.filter(binding=binding, trace_id__in={s.trace_id for s in spans}).values_list(
            "trace_id", flat=True
        )
    )
    now = timezone.now()
    rows = [
        TraceSpan(
            binding=binding,
            trace_id=s.trace_id,
            span_id=s.span_id,
            parent_span_id=s.parent_span_id,
            name=s.name,
            kind=s.kind,
            start_ns=s.start_ns,
            end_ns=s.end_ns,
            status_code=s.status_code,
            attributes=s.attributes,
            resource=s.resource,
            events=s.events,
            received_at=now,
        )
        for s in spans
        if s.trace_id not in finished
    ]
    # ignore_conflicts: the unique (binding, trace id, span id) makes a re-sent span a no-op, also when two
    # exports of it race. Its count is not reported back by every database, so it is not used.
    TraceSpan.objects.bulk_create(rows, ignore_conflicts=True, batch_size=1000)
    return len(rows)


@dataclass
class Finished:
    outputs: int = 0
    sampled_out: int = 0
    rejected: int = 0
    waiting: int = 0


def finish_ready_traces(
    *, binding_id: int, now: dt.datetime | None = None, quiet_seconds: float | None = None
) -> Finished:
    """Make outputs of the binding's complete traces. Each trace in its own transaction, so one refused trace
    keeps no other from becoming an output; running it twice (or in two workers at once) changes nothing more."""
    binding = TraceBinding.objects.select_related("eval_set").get(pk=binding_id)
    now = now or timezone.now()
    quiet = settings.ICEWATER_OTLP_QUIET_SECONDS if quiet_seconds is None else quiet_seconds
    traces = (
        TraceSpan.objects.filter(binding=binding)
        .values("trace_id")
        .annotate(last=Max("received_at"))
        .filter(last__lte=now - dt.timedelta(seconds=quiet))
        .order_by("last")
    )
    done = Finished()
    rootless_after = now - dt.timedelta(seconds=settings.ICEWATER_OTLP_ROOTLESS_SECONDS)
    for trace in traces:
        status = _finish_trace(binding, trace["trace_id"], give_up=trace["last"] <= rootless_after)
        if status == TraceOutcome.Status.OUTPUT:
            done.outputs += 1
        elif status == TraceOutcome.Status.SAMPLED_OUT:
            done.sampled_out += 1
        elif status == TraceOutcome.Status.REJECTED:
            done.rejected += 1
        else:
            done.waiting += 1
    return done


def _finish_trace(binding: TraceBinding, trace_id: str, *, give_up: bool) -> str | None:
    """The trace's outcome, written with its spans deleted; None when it must wait for its root."""
    with transaction.atomic():
        # The lock makes a second finisher wait, then find no rows: the trace is done once.
        rows = list(TraceSpan.objects.select_for_update().filter(binding=binding, trace_id=trace_id))
        if not rows:
            return None
        staged = TraceSpan.objects.filter(pk__in=[r.pk for r in rows])
        if TraceOutcome.objects.filter(binding=binding, trace_id=trace_id).exists():
            staged.delete()  # a span that arrived while its trace was being finished: already decided
            return None
        spans = [_record(r) for r in rows]
        rules = rules_of(binding)
        if find_root(spans, rules) is None and not give_up:
            return None
        outcome = TraceOutcome(binding=binding, trace_id=trace_id, spans=len(rows))
        if not keep(spans, trace_id, rules):
            outcome.status = TraceOutcome.Status.SAMPLED_OUT
        else:
            try:
                outcome.output = _write_output(binding.eval_set, trace_output(spans, trace_id, rules))
                outcome.status = TraceOutcome.Status.OUTPUT
            except TraceRefused as exc:
                outcome.status = TraceOutcome.Status.REJECTED
                outcome.reason = str(exc)[:REASON_MAX]
        outcome.save()
        staged.delete()
        return outcome.status


def _record(row: TraceSpan) -> SpanRecord:
    return SpanRecord(
        trace_id=row.trace_id,
        span_id=row.span_id,
        parent_span_id=row.parent_span_id,
        name=row.name,
        kind=row.kind,
        start_ns=row.start_ns,
        end_ns=row.end_ns,
        status_code=row.status_code,
        attributes=row.attributes,
        resource=row.resource,
        events=row.events,
    )


def _write_output(eval_set: EvalSet, made) -> Output:
    """The case (made, or the same one already there) and its new output; TraceRefused otherwise."""
    try:
        case_id = f.ident(made.case_id, "case id", CASE_ID_MAX)
        agent_version = f.ident(made.agent_version, "agent version", AGENT_VERSION_MAX)
    except RecordError as exc:
        raise TraceRefused(f"the trace's {exc.field} {exc.message}") from None
    try:
        with transaction.atomic():  # a savepoint: a unique clash with a concurrent trace is a refusal
            case, _ = Case.objects.get_or_create(eval_set=eval_set, case_id=case_id, defaults={"input": made.input})
            if case.input != made.input:
                raise TraceRefused(f"case {case_id!r} already exists in {eval_set.name} with another input")
            if Output.objects.filter(case=case, agent_version=agent_version).exists():
                raise TraceRefused(
                    f"case {case_id!r} already has an output of agent version {agent_version!r}; "
                    "name another case id or agent version"
                )
            return Output.objects.create(
                case=case,
                agent_version=agent_version,
                response=made.response,
                tool_calls=made.tool_calls,
                latency_ms=made.latency_ms,
                metadata=made.metadata,
            )
    except IntegrityError:
        raise TraceRefused(
            f"case {case_id!r} of agent version {agent_version!r} was written by another trace"
        ) from None


@dataclass(frozen=True)
class TraceSummary:
    """What the eval set's page says about its traces."""

    waiting_spans: int
    outputs: int
    sampled_out: int
    rejected: int
    reasons: list[tuple[str, int]]  # the most frequent reasons for refusal, with how many traces each

    @property
    def traces(self) -> int:
        return self.outputs + self.sampled_out + self.rejected


def trace_summary(eval_set: EvalSet) -> TraceSummary | None:
    """None when no token sends this eval set traces."""
    bindings = list(TraceBinding.objects.filter(eval_set=eval_set).values_list("pk", flat=True))
    if not bindings:
        return None
    counts: Counter[str] = Counter(
        dict(
            TraceOutcome.objects.filter(binding__in=bindings)
            .values_list("status")
            .annotate(n=Count("pk"))
            .values_list("status", "n")
        )
    )
    reasons: defaultdict[str, int] = defaultdict(int)
    rejected = TraceOutcome.objects.filter(binding__in=bindings, status=TraceOutcome.Status.REJECTED)
    for reason, n in rejected.values("reason").annotate(n=Count("pk")).values_list("reason", "n"):
        reasons[reason] += n
    return TraceSummary(
        waiting_spans=TraceSpan.objects.filter(binding__in=bindings).count(),
        outputs=counts[TraceOutcome.Status.OUTPUT],
        sampled_out=counts[TraceOutcome.Status.SAMPLED_OUT],
        rejected=counts[TraceOutcome.Status.REJECTED],
        reasons=sorted(reasons.items(), key=lambda kv: -kv[1])[:5],
    )
