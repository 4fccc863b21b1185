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

import orjson
from django.conf import settings
from django.db import IntegrityError, OperationalError, connection, transaction
from django.db.models import Count, Max, Sum
from django.utils import timezone

from evals import record_fields as f
from evals.models import Case, EvalSet, Output
from evals.problems import RecordError

from .models import TraceBinding, TraceOutcome, TraceSpan
from .otel_traces import SpanRecord, TraceOutput, TraceRefused, TraceRules, find_root, keep, trace_output
from .record_model import AGENT_VERSION_MAX, CASE_ID_MAX

REASON_MAX = 500  # TraceOutcome.reason
# Traces finished in one transaction: a few queries for the batch instead of ten per trace.
FINISH_BATCH = 200


def rules_of(binding: TraceBinding) -> TraceRules:
    return TraceRules(
        case_id_attribute=binding.case_id_attribute,
        agent_version_attribute=binding.agent_version_attribute,
        root_span_name=binding.root_span_name,
        root_span_kind=binding.root_span_kind,
        sample_one_in=binding.sample_one_in,
        keep_attribute=binding.keep_attribute,
        keep_value=binding.keep_value,
        keep_judge_fail=binding.keep_judge_fail,
    )


def waiting_spans(binding_id: int) -> int:
    return TraceSpan.objects.filter(binding_id=binding_id).count()


def has_waiting_spans(binding_id: int) -> bool:
    return TraceSpan.objects.filter(binding_id=binding_id).exists()


def bindings_with_waiting_spans() -> list[int]:
    return list(TraceSpan.objects.order_by("binding_id").values_list("binding_id", flat=True).distinct())


@dataclass(frozen=True)
class Stored:
    staged: int  # spans given to the database to stage (a re-sent one among them is dropped there)
    late: int  # spans of traces already finished that were not part of them: in no output, counted on the trace


def store_spans(*, binding: TraceBinding, spans: list[SpanRecord], copy: bool | None = None) -> Stored:
    """Stage the spans. A span already staged changes nothing; so does one sent again after its trace was
    finished. A span of a finished trace that was not part of it is late: counted on the trace
    (TraceOutcome.late_spans), not staged. Inside the caller's transaction.

    On PostgreSQL the rows go in with COPY through a temporary table, then one INSERT ... ON CONFLICT DO NOTHING:
    a parameterised INSERT of 512 spans spent most of an export's time quoting parameters (bench/otel.py).
    `copy=False` takes the portable bulk_create path there too; both give the same rows.
    """
    finished = set(
        TraceOutcome.objects.filter(binding=binding, trace_id__in={s.trace_id for s in spans}).values_list(
            "trace_id", flat=True
        )
    )
    late = _count_late(binding, [(s.trace_id, s.span_id) for s in spans if s.trace_id in finished]) if finished else 0
    kept = [s for s in spans if s.trace_id not in finished]
    if not kept:
        return Stored(staged=0, late=late)
    now = timezone.now()
    if copy is None:
        copy = connection.vendor == "postgresql"
    if copy:
        _copy_spans(binding, kept, now)
        return Stored(staged=len(kept), late=late)
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
        for s in kept
    ]
    # ignore_conflicts: the unique (binding, trace id, span id) makes a re-sent span a no-op, also when two
    # exports of it race.
    TraceSpan.objects.bulk_create(rows, ignore_conflicts=True, batch_size=500)
    return Stored(staged=len(rows), late=late)


def _count_late(binding: TraceBinding, arrived: list[tuple[str, str]]) -> int:
    """The (trace id, span id) pairs of finished traces that were not part of them: late. Each new one is added to
    its trace's late spans (locked: two exports of one late span count it once). Returns how many distinct late
    spans `arrived` holds, counted again or not: none of them is in an output."""
    outcomes = TraceOutcome.objects.select_for_update().filter(binding=binding, trace_id__in={t for t, _ in arrived})
    arrived_by_trace: defaultdict[str, set[str]] = defaultdict(set)
    for trace_id, span_id in arrived:
        arrived_by_trace[trace_id].add(span_id)
    late = 0
    for outcome in outcomes.order_by("pk"):
        late_here = arrived_by_trace[outcome.trace_id] - set(outcome.span_ids)
        late += len(late_here)
        new = sorted(late_here - set(outcome.late_span_ids))
        if new:
            TraceOutcome.objects.filter(pk=outcome.pk).update(
                late_span_ids=[*outcome.late_span_ids, *new], late_spans=len(outcome.late_span_ids) + len(new)
            )
    return late


_COLUMNS = (
    "binding_id, trace_id, span_id, parent_span_id, name, kind, start_ns, end_ns, status_code, attributes, "
    "resource, events, received_at"
)


def _copy_spans(binding: TraceBinding, spans: list[SpanRecord], now: dt.datetime) -> None:
    table = TraceSpan._meta.db_table
    stage = "icewater_stage_span"
    resources: dict[int, str] = {}  # one resource is shared by many spans: encode it once
    with connection.cursor() as cursor:
        # ON COMMIT DROP: the caller's transaction (the receiver's atomic block) ends it.
        cursor.execute(f"CREATE TEMP TABLE {stage} ON COMMIT DROP AS SELECT {_COLUMNS} FROM {table} WITH NO DATA")  # noqa: S608
        with cursor.cursor.copy(f"COPY {stage} ({_COLUMNS}) FROM STDIN") as copy:
            for s in spans:
                resource = resources.get(id(s.resource))
                if resource is None:
                    resource = resources[id(s.resource)] = orjson.dumps(s.resource).decode()
                copy.write_row(
                    (
                        binding.pk,
                        s.trace_id,
                        s.span_id,
                        s.parent_span_id,
                        s.name,
                        s.kind,
                        s.start_ns,
                        s.end_ns,
                        s.status_code,
                        orjson.dumps(s.attributes).decode(),
                        resource,
                        orjson.dumps(s.events).decode(),
                        now,
                    )
                )
        # Only table names are interpolated (the model's own and the fixed staging name); the rows came by COPY.
        cursor.execute(
            f"INSERT INTO {table} ({_COLUMNS}) SELECT {_COLUMNS} FROM {stage} "  # noqa: S608
            "ON CONFLICT (binding_id, trace_id, span_id) DO NOTHING"
        )
        cursor.execute(f"DROP TABLE {stage}")


@dataclass
class Finished:
    outputs: int = 0
    sampled_out: int = 0
    rejected: int = 0
    waiting: int = 0


def finish_ready_traces(
    *, binding_id: int, now: dt.datetime | None = None, quiet_seconds: float | None = None
) -> Finished:
    """Make outputs of the binding's complete traces, FINISH_BATCH traces a transaction: each batch is written
    whole or not at all, and running this twice (or in two workers at once) changes nothing more."""
    binding = TraceBinding.objects.select_related("eval_set").get(pk=binding_id)
    now = now or timezone.now()
    quiet = settings.ICEWATER_OTLP_QUIET_SECONDS if quiet_seconds is None else quiet_seconds
    ready = (
        TraceSpan.objects.filter(binding=binding)
        .values("trace_id")
        .annotate(last=Max("received_at"))
        .filter(last__lte=now - dt.timedelta(seconds=quiet))
        .order_by("last", "trace_id")
        .values_list("trace_id", "last")
    )
    rootless_after = now - dt.timedelta(seconds=settings.ICEWATER_OTLP_ROOTLESS_SECONDS)
    traces = [(trace_id, last <= rootless_after) for trace_id, last in ready]
    done = Finished()
    for start in range(0, len(traces), FINISH_BATCH):
        for status in _finish_batch(binding, traces[start : start + FINISH_BATCH]):
            if status == TraceOutcome.Status.OUTPUT:
                done.outputs += 1
            elif status == TraceOutcome.Status.SAMPLED_OUT:
                done.sampled_out += 1
            elif status == TraceOutcome.Status.REJECTED:
                done.rejected += 1
            else:
                done.waiting += 1
    return done


def finish_every_waiting_trace() -> str:
    """The periodic sweep (periodic/jobs.py): finish the ready traces of every token whose spans wait, so spans
    staged while the broker was down (no finisher could be scheduled) do not wait for another export. What it did,
    in a line."""
    done = Finished()
    busy = 0
    for binding_id in bindings_with_waiting_spans():
        try:
            one = finish_ready_traces(binding_id=binding_id)
        except OperationalError:  # the batch was rolled back, its spans kept: the next sweep tries again
            busy += 1
            continue
        done.outputs += one.outputs
        done.sampled_out += one.sampled_out
        done.rejected += one.rejected
        done.waiting += one.waiting
    said = (
        f"{done.outputs} output(s) made, {done.sampled_out} trace(s) sampled out, {done.rejected} refused, "
        f"{done.waiting} waiting for their root span"
    )
    return said + (f"; {busy} token(s) left for the next sweep (the database cannot take the write)" if busy else "")


def _finish_batch(binding: TraceBinding, traces: list[tuple[str, bool]]) -> list[str | None]:
    try:
        with transaction.atomic():
            return _decide(binding, traces)
    except IntegrityError:
        # Another finisher wrote a case or output of one of these at the same moment: one trace at a time, and
        # one that clashes again waits for the next run, which sees what the other wrote.
        if len(traces) == 1:
            return [None]
        return [status for trace in traces for status in _finish_batch(binding, [trace])]


def _decide(binding: TraceBinding, traces: list[tuple[str, bool]]) -> list[str | None]:
    """Each trace's outcome (None: it waits for its root), written with its new case and output, and its spans
    deleted. Inside the caller's transaction."""
    give_up = dict(traces)
    # The lock (in id order, so two finishers never deadlock) makes a second finisher wait, then find no rows.
    rows = TraceSpan.objects.select_for_update().filter(binding=binding, trace_id__in=give_up).order_by("pk")
    by_trace: defaultdict[str, list[TraceSpan]] = defaultdict(list)
    for row in rows:
        by_trace[row.trace_id].append(row)
    decided = set(
        TraceOutcome.objects.filter(binding=binding, trace_id__in=by_trace).values_list("trace_id", flat=True)
    )
    if decided:
        _count_late(binding, [(t, r.span_id) for t in decided for r in by_trace[t]])
    rules = rules_of(binding)
    outcomes: list[TraceOutcome] = []
    made: list[tuple[TraceOutcome, TraceOutput]] = []
    finished_rows: list[int] = []
    for trace_id, trace_rows in by_trace.items():
        if trace_id in decided:  # spans that arrived while their trace was being finished: late, counted there
            finished_rows += [r.pk for r in trace_rows]
            continue
        spans = [_record(r) for r in trace_rows]
        if find_root(spans, rules) is None and not give_up[trace_id]:
            continue
        outcome = TraceOutcome(
            binding=binding, trace_id=trace_id, spans=len(spans), span_ids=sorted(r.span_id for r in trace_rows)
        )
        outcomes.append(outcome)
        finished_rows += [r.pk for r in trace_rows]
        if not keep(spans, trace_id, rules):
            outcome.status = TraceOutcome.Status.SAMPLED_OUT
            continue
        try:
            made.append((outcome, _checked(trace_output(spans, trace_id, rules))))
            outcome.status = TraceOutcome.Status.OUTPUT
        except TraceRefused as exc:
            outcome.status, outcome.reason = TraceOutcome.Status.REJECTED, str(exc)[:REASON_MAX]
    _write_outputs(binding.eval_set, made)
    TraceOutcome.objects.bulk_create(outcomes)
    TraceSpan.objects.filter(pk__in=finished_rows).delete()
    statuses: dict[str, str] = {o.trace_id: o.status for o in outcomes}
    return [statuses.get(trace_id) for trace_id, _ in traces if trace_id in by_trace]


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


def _checked(made: TraceOutput) -> TraceOutput:
    try:
        f.ident(made.case_id, "case id", CASE_ID_MAX)
        f.ident(made.agent_version, "agent version", AGENT_VERSION_MAX)
    except RecordError as exc:
        raise TraceRefused(f"the trace's {exc.field} {exc.message}") from None
    return made


def _write_outputs(eval_set: EvalSet, made: list[tuple[TraceOutcome, TraceOutput]]) -> None:
    """The new cases and outputs of a batch, in two bulk inserts. A case already there must have the same input,
    and a case's output of an agent version is never overwritten: such a trace is refused, with the reason."""
    case_ids = {m.case_id for _, m in made}
    cases = {c.case_id: c for c in Case.objects.filter(eval_set=eval_set, case_id__in=case_ids)}
    taken = set(
        Output.objects.filter(case__eval_set=eval_set, case__case_id__in=case_ids).values_list(
            "case__case_id", "agent_version"
        )
    )
    new_cases: list[Case] = []
    outputs: list[tuple[TraceOutcome, Output]] = []
    for outcome, m in made:
        case = cases.get(m.case_id)
        if case is not None and case.input != m.input:
            outcome.status = TraceOutcome.Status.REJECTED
            outcome.reason = f"case {m.case_id!r} already exists in {eval_set.name} with another input"[:REASON_MAX]
            continue
        if (m.case_id, m.agent_version) in taken:
            outcome.status = TraceOutcome.Status.REJECTED
            outcome.reason = (
                f"case {m.case_id!r} already has an output of agent version {m.agent_version!r}; "
                "name another case id or agent version"
            )[:REASON_MAX]
            continue
        if case is None:
            case = cases[m.case_id] = Case(eval_set=eval_set, case_id=m.case_id, input=m.input)
            new_cases.append(case)
        taken.add((m.case_id, m.agent_version))
        output = Output(
            case=case,
            agent_version=m.agent_version,
            response=m.response,
            tool_calls=m.tool_calls,
            latency_ms=m.latency_ms,
            metadata=m.metadata,
        )
        outputs.append((outcome, output))
    # Their ids come back (PostgreSQL, SQLite >= 3.35), and bulk_create of the outputs takes them from the cases.
    Case.objects.bulk_create(new_cases)
    Output.objects.bulk_create([o for _, o in outputs])
    for outcome, output in outputs:
        outcome.output = output


@dataclass(frozen=True)
class TraceSummary:
    """What the eval set's page says about its traces."""

    waiting_spans: int
    outputs: int
    sampled_out: int
    rejected: int
    late_spans: int  # spans that came after their trace was finished: in no output
    reasons: list[tuple[str, int]]  # the most frequent reasons for refusal, with how many traces each

    @property
    def traces(self) -> int:
        return self.outputs + self.sampled_out + self.rejected


def trace_summary(eval_set: EvalSet) -> TraceSummary | None:
    """None when no token sends this eval set traces."""
    bindings = list(TraceBinding.objects.filter(eval_set=eval_set).values_list("pk", flat=True))
    if not bindings:
        return None
    counts: Counter[str] = Counter()
    late_spans = 0
    by_status = TraceOutcome.objects.filter(binding__in=bindings).values("status")
    for status, n, late in by_status.annotate(n=Count("pk"), late=Sum("late_spans")).values_list("status", "n", "late"):
        counts[status] += n
        late_spans += late or 0
    reasons: defaultdict[str, int] = defaultdict(int)
    rejected = TraceOutcome.objects.filter(binding__in=bindings, status=TraceOutcome.Status.REJECTED)
    for reason, n in rejected.values("reason").annotate(n=Count("pk")).values_list("reason", "n"):
        reasons[reason] += n
    return TraceSummary(
        waiting_spans=TraceSpan.objects.filter(binding__in=bindings).count(),
        outputs=counts[TraceOutcome.Status.OUTPUT],
        sampled_out=counts[TraceOutcome.Status.SAMPLED_OUT],
        rejected=counts[TraceOutcome.Status.REJECTED],
        late_spans=late_spans,
        reasons=sorted(reasons.items(), key=lambda kv: -kv[1])[:5],
    )
