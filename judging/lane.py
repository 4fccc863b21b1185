"""A lane: one worker's share of a judge run (a Celery task, or the whole run with --in-process).

Three kinds of thread, so that the threads calling the model never wait on the database:

- the feeder (the lane's own thread) claims pending items a few at a time (one statement
  on PostgreSQL: SELECT ... FOR UPDATE SKIP LOCKED, with a lease the heartbeat keeps
  renewing), prepares them (instrument verdicts, the judging request, one cache lookup
  per batch) and keeps about one ready item per calling thread queued;
- the calling threads (the lane's share of the judge config's max_concurrency, plus a few
  spares) take ready items, ask the model inside the limiter's bound (retry.py), parse
  the answer and hand the verdict rows to the writer;
- the flusher writes finished items in small groups: verdicts with ON CONFLICT DO NOTHING
  on (run, output, criterion, sample) and the items marked done, in one transaction.

Crash safety: a verdict and its item's "done" are committed together, so an item is
either done with all its verdicts or still claimed; a claimed item whose lane stopped
renewing its lease is claimed again by any live lane. Work a dead lane had finished but
not yet written is redone (the model is asked again), never written twice.

Speed (bench/judge_throughput.py): the model calls and everything else share one
interpreter lock, and every millisecond of CPU spent beside the calls delays the answers
they are waiting to read. Hence the PostgreSQL paths in plain SQL and COPY, verdict rows
as dicts rather than model instances, and orjson: each was measured with py-spy.
"""

from __future__ import annotations

import functools
import json
import logging
import os
import queue
import random
import socket
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import timedelta

import orjson
from django.db import DatabaseError, OperationalError, connection, transaction
from django.db.models import F
from django.utils import timezone

from labeling.models import Output
from labeling.transcript import Transcript

from . import cache, parse
from .backends import Misconfigured, ModelBackend, backend_for
from .backends.instruments import evaluate
from .limiter import HeldSlots, Limiter, LocalLimiter, RedisLimiter, limiter_for
from .models import ErrorKind, JudgeConfig, JudgeRun, RunItem, Verdict, VerdictOutcome
from .prompt import CriterionSpec, JudgeRequest, Subject, build_request
from .retry import call_with_retries, ms_since

log = logging.getLogger("judging.runner")

# An item's lease outlives 5 missed heartbeats: a live lane never loses its items to a
# hiccup, and a dead worker's items are taken again within about 10 seconds.
HEARTBEAT_S = 2.0
LEASE_S = 10.0
# Items claimed per query: fewer claim and cache queries, while a lane never sits on much
# work another lane could do (a few items, a fraction of a second at full speed).
CLAIM_BATCH = 16
# Finished items are written in groups of up to this many, at least every WRITE_DELAY_S:
# a handful of statements per group instead of four per item. A crash loses at most one
# group's answers, which are asked again (the leases say whose they were).
WRITE_BATCH = 32
WRITE_DELAY_S = 0.1
WRITE_ATTEMPTS = 3
# An item claimed more often than this without being written is given up as ERROR (see _prepare_one):
# a dead worker costs an item one extra claim, so only something that breaks every attempt gets here.
MAX_CLAIMS = 5
# Consecutive database errors a thread rides out (with growing pauses) before its lane gives up.
CLAIM_FAILURES_TOLERATED = 5
# One spare calling thread per this many slots of a lane's share (see lane_threads).
SPARE_THREADS_PER = 4
# How often the lane's first thread looks again when all that is left is held by other lanes.
WAIT_FOR_LEASES_S = 0.5


@dataclass
class Spend:
    model_calls: int = 0
    tokens_in: int = 0
    tokens_out: int = 0
    cache_hit: bool = False


@dataclass
class Work:
    """One claimed item on its way: what is known so far and what still needs the model."""

    item: RunItem | ClaimedItem
    rows: list[dict]  # verdict rows, see _verdict
    spend: Spend = field(default_factory=Spend)
    request: JudgeRequest | None = None
    model_criteria: list = field(default_factory=list)
    common: dict = field(default_factory=dict)
    transcript: Transcript | None = None


class Writer:
    """Collects finished items; the lane's flusher thread writes them in groups (see WRITE_BATCH).

    The threads that call the model never wait on the database: they add and go back to the model.
    """

    def __init__(self, lane: Lane):
        self.lane = lane
        self._buffer: list[Work] = []
        self._lock = threading.Lock()
        self.full = threading.Event()  # wakes the flusher before WRITE_DELAY_S is up

    def add(self, work: Work) -> None:
        with self._lock:
            self._buffer.append(work)
            # Near the end of the run nothing more is coming to fill a group: write at once.
            if len(self._buffer) >= WRITE_BATCH or self.lane.last_batch.is_set():
                self.full.set()

    def flush(self) -> None:
        with self._lock:
            batch, self._buffer = self._buffer, []
        if not batch:
            return
        try:
            write(batch)
        except Exception:
            # Nothing of the group was written: free its items so that they are judged again.
            log.exception(
                "judge run %s: could not write %s items; they go back to pending", self.lane.run.pk, len(batch)
            )
            for work in batch:
                try:
                    release(self.lane, work.item)
                except Exception:  # the database is gone: the leases run out when the lane does
                    log.exception("judge run %s: could not release item %s", self.lane.run.pk, work.item.pk)
            return
        for work in batch:
            _log_errors(self.lane, work)
        if self.lane.last_batch.is_set():
            # Maybe the run's last items: mark it done now rather than when every lane has wound down (a lane
            # waits on items other lanes hold, and they may be these), so a finished run shows as finished.
            from .runner import finish_if_complete

            finish_if_complete(self.lane.run.pk)


@dataclass
class Lane:
    run: JudgeRun
    config: JudgeConfig
    criteria: list  # Criterion rows of the rubric version, in rubric order
    backend: ModelBackend | None
    limiter: LaneGate
    lane_id: str
    sleep: Callable[[float], object] | None = None
    cancelled: threading.Event = field(default_factory=threading.Event)
    rng: random.Random = field(default_factory=random.Random)
    threads: int = 1

    def __post_init__(self) -> None:
        self.by_id = {c.pk: c for c in self.criteria}
        self.writer = Writer(self)
        # Prepared items waiting for a calling thread, and a None per thread once the feeder is done.
        self.ready: queue.SimpleQueue[Work | None] = queue.SimpleQueue()
        self.hungry = threading.Event()  # set by a calling thread when the queue runs low
        self.unstarted: list[Work] = []  # taken off the queue after a cancel: released at the end
        self.failure: BaseException | None = None
        self.last_batch = threading.Event()  # set once a claim came back empty: the run is near its end

    def pause(self, seconds: float) -> None:
        # A backoff ends early when the run is cancelled.
        if self.sleep is not None:
            self.sleep(seconds)
        else:
            self.cancelled.wait(seconds)

    def release_unstarted(self) -> None:
        while True:
            try:
                work = self.ready.get_nowait()
            except queue.Empty:
                break
            if work is not None:
                self.unstarted.append(work)
        for work in self.unstarted:
            release(self, work.item)
        self.unstarted.clear()


def work_lane(
    run_id: int,
    *,
    in_process: bool = False,
    limiter: Limiter | None = None,
    sleep: Callable[[float], object] | None = None,
    rng: random.Random | None = None,
) -> str:
    """Work a run's items until none is left (or the run stops); return the run's status."""
    from .runner import fail_run, finish_if_complete

    run = JudgeRun.objects.select_related("judge_config", "rubric_version__rubric").filter(pk=run_id).first()
    if run is None:
        return "gone"
    if not run.is_active:
        return run.status
    if JudgeRun.objects.filter(pk=run_id, status=JudgeRun.Status.QUEUED).update(
        status=JudgeRun.Status.RUNNING, started_at=timezone.now()
    ):
        log.info("judge run %s started", run_id)
    config = run.judge_config
    criteria = list(run.rubric_version.criteria.order_by("order"))
    needs_model = any(c.key not in config.instruments for c in criteria)
    try:
        backend = backend_for(config) if needs_model else None
    except Misconfigured as exc:
        fail_run(run_id, str(exc))
        log.error("judge run %s failed: %s", run_id, exc)
        return JudgeRun.Status.FAILED
    if limiter is None:
        limiter = LocalLimiter(config.max_concurrency) if in_process else limiter_for(config, in_process=False)
    share = lane_share(config.max_concurrency, in_process=in_process)
    threads = lane_threads(share, needs_model=needs_model)
    lane = Lane(
        run=run,
        config=config,
        criteria=criteria,
        backend=backend,
        limiter=LaneGate(limiter, share),
        lane_id=f"{socket.gethostname()[:30]}:{os.getpid()}:{uuid.uuid4().hex[:8]}",
        sleep=sleep,
        rng=rng or random.Random(),
        threads=max(1, min(threads, run.total_items)),
    )
    stop = threading.Event()
    background = [
        threading.Thread(target=_heartbeat, args=(lane, stop), daemon=True),
        threading.Thread(target=_flusher, args=(lane, stop), daemon=True),
    ]
    for thread in background:
        thread.start()
    try:
        with ThreadPoolExecutor(max_workers=lane.threads, thread_name_prefix=f"judge-run-{run_id}") as pool:
            futures = [pool.submit(_worker, lane) for _ in range(lane.threads)]
            _feeder(lane)  # in this thread: it has a database connection open already (a new one takes ~20 ms)
            for future in futures:
                future.result()
    finally:
        stop.set()
        lane.writer.full.set()
        for thread in background:
            thread.join()
        lane.writer.flush()
        lane.limiter.close()
        lane.release_unstarted()  # claimed but never started (the run was cancelled): free them at once
    if lane.failure is not None:
        raise lane.failure
    status = finish_if_complete(run_id)
    log.info("judge run %s lane %s ended; run is %s", run_id, lane.lane_id, status)
    return status


def lane_share(max_concurrency: int, *, in_process: bool) -> int:
    """Calls one lane may have in flight. In process, the whole bound. On Celery the lanes of a run split it:
    together they just fill it, so no thread spends Redis round trips waiting on the shared limiter in the
    common case (a worker running all of a run's lanes at once); the shared limiter still holds the bound
    when more lanes join (a resumed run, two runs of one config)."""
    from .runner import LANES_PER_RUN

    if in_process:
        return max_concurrency
    return max(1, -(-max_concurrency // LANES_PER_RUN))


def lane_threads(share: int, *, needs_model: bool) -> int:
    """Threads of one lane: instruments need no parallelism; for model calls, the lane's share of the bound
    plus spare threads. A thread gives its slot back as soon as the answer is in, then parses it and takes
    the next item; a spare thread, waiting at the lane's gate with its request ready, takes that slot at
    once, so the slots stay busy while the others do their bookkeeping."""
    if not needs_model:
        return 1
    return share + max(1, share // SPARE_THREADS_PER)


class LaneGate:
    """The lane's share of the bound, in front of the shared limiter: spare threads queue on a semaphore in
    this process, never as waiters on Redis (each wait there costs several round trips). On Redis the lane
    keeps the slots it took for its next calls (limiter.HeldSlots) instead of two round trips per call."""

    def __init__(self, inner: Limiter, share: int):
        self._inner: Limiter = HeldSlots(inner) if isinstance(inner, RedisLimiter) else inner
        self._semaphore = threading.BoundedSemaphore(max(1, share))

    @contextmanager
    def slot(self) -> Iterator[None]:
        with self._semaphore, self._inner.slot():
            yield

    def cool_down(self, seconds: float) -> None:
        self._inner.cool_down(seconds)

    def close(self) -> None:
        """Give back what the lane holds (its threads are done)."""
        if isinstance(self._inner, HeldSlots):
            self._inner.close()


def _heartbeat(lane: Lane, stop: threading.Event) -> None:
    try:
        while not stop.wait(HEARTBEAT_S):
            try:
                RunItem.objects.filter(run_id=lane.run.pk, lane=lane.lane_id, state=RunItem.State.CLAIMED).update(
                    lease_until=timezone.now() + timedelta(seconds=LEASE_S)
                )
                status = JudgeRun.objects.filter(pk=lane.run.pk).values_list("status", flat=True).first()
            except DatabaseError:  # a deadlock with a write, a dropped connection: try again at the next beat
                log.warning("judge run %s: heartbeat failed; retrying", lane.run.pk, exc_info=True)
                connection.close()
                continue
            if status is not None and status != JudgeRun.Status.RUNNING:  # cancelled (or failed) meanwhile
                lane.cancelled.set()
                lane.hungry.set()
    finally:
        connection.close()


def _flusher(lane: Lane, stop: threading.Event) -> None:
    try:
        while not stop.is_set():
            lane.writer.full.wait(WRITE_DELAY_S)
            lane.writer.full.clear()
            lane.writer.flush()
    finally:
        connection.close()


def _feeder(lane: Lane) -> None:
    """Claim and prepare items ahead of the calling threads, so that none of them waits on the database.

    It keeps about one item per thread queued (a few seconds of leases at most, so another lane is never
    starved for long), and ends when nothing is left that this lane could take: then every thread gets a
    None and stops. Items other lanes hold are waited for (they may have died; their leases run out).
    """
    failures = 0
    try:
        while not lane.cancelled.is_set():
            if lane.ready.qsize() >= lane.threads:
                lane.hungry.wait(WRITE_DELAY_S)
                lane.hungry.clear()
                continue
            try:
                items = claim(lane, max(CLAIM_BATCH, lane.threads))
                batch = prepare(lane, items) if items else []
                failures = 0
            except DatabaseError:
                # A dropped connection or a restart of the database: wait and claim again, but not for ever.
                failures += 1
                if failures > CLAIM_FAILURES_TOLERATED:
                    raise
                log.warning("judge run %s: claiming failed; retrying", lane.run.pk, exc_info=True)
                connection.close()
                lane.cancelled.wait(WAIT_FOR_LEASES_S * failures)
                continue
            for work in batch:
                if work.request is None:
                    lane.writer.add(work)  # instruments or the cache answered it: no model call
                else:
                    lane.ready.put(work)
            if not items:
                lane.last_batch.set()
                if not _held_elsewhere(lane):
                    return
                lane.cancelled.wait(WAIT_FOR_LEASES_S)
    except BaseException as exc:
        lane.failure = exc
        lane.cancelled.set()
    finally:
        for _ in range(lane.threads):
            lane.ready.put(None)


def _worker(lane: Lane) -> None:
    """A calling thread: takes prepared items, asks the model, hands the answers to the writer."""
    try:
        while (work := lane.ready.get()) is not None:
            if lane.ready.qsize() < lane.threads:
                lane.hungry.set()
            if lane.cancelled.is_set():
                lane.unstarted.append(work)
                continue
            try:
                done = ask_model(lane, work)
            except Exception as exc:  # a bug: never let one item end the lane silently
                log.exception("judge run %s: item %s failed", lane.run.pk, work.item.pk)
                done = _internal_error(lane, work, exc)
            if done:
                lane.writer.add(work)
            else:  # cancelled between attempts: nothing is written, the item is freed at the end
                lane.unstarted.append(work)
    finally:
        connection.close()


def _held_elsewhere(lane: Lane) -> bool:
    """Items of the running run that are neither done nor this lane's own (its threads finish those)."""
    return (
        JudgeRun.objects.filter(pk=lane.run.pk, status=JudgeRun.Status.RUNNING).exists()
        and RunItem.objects.filter(run_id=lane.run.pk)
        .exclude(state=RunItem.State.DONE)
        .exclude(state=RunItem.State.CLAIMED, lane=lane.lane_id)
        .exists()
    )


# -- claiming ------------------------------------------------------------------------------------------


def claim(lane: Lane, limit: int = 1) -> list[RunItem] | list[ClaimedItem]:
    """Take up to `limit` pending items (or items whose lease ran out), outputs loaded; [] if the run stopped."""
    if connection.vendor == "postgresql":
        return _claim_postgresql(lane, limit)
    now = timezone.now()
    running = RunItem.objects.select_for_update(skip_locked=True, of=("self",)).filter(
        run_id=lane.run.pk, run__status=JudgeRun.Status.RUNNING
    )
    fields = ("pk", "output_id", "criterion_id", "sample", "claims")
    with transaction.atomic():
        # Pending items first, through a partial index; expired leases only when none is left.
        items = list(running.filter(state=RunItem.State.PENDING).order_by("pk").only(*fields)[:limit])
        if not items:
            expired = running.filter(state=RunItem.State.CLAIMED, lease_until__lt=now)
            items = list(expired.order_by("pk").only(*fields)[:limit])
        if not items:
            return []
        RunItem.objects.filter(pk__in=[i.pk for i in items]).update(
            state=RunItem.State.CLAIMED,
            lane=lane.lane_id,
            lease_until=now + timedelta(seconds=LEASE_S),
            claims=F("claims") + 1,
        )
    outputs = Output.objects.select_related("case").in_bulk([i.output_id for i in items])
    for item in items:
        item.output = outputs[item.output_id]
    return items


# The same claim on PostgreSQL as one statement (lock, update and the outputs to grade in a single round
# trip): the lane's feeder runs it for every batch, and the three ORM queries above cost more CPU than the
# model call they prepare (measured with py-spy). {which} picks pending items or items whose lease ran out.
_CLAIM_SQL = """
WITH picked AS (
    SELECT i.id FROM {items} i
    WHERE i.run_id = %(run)s AND {which}
      AND EXISTS (SELECT 1 FROM {runs} r WHERE r.id = %(run)s AND r.status = 'running')
    ORDER BY i.id LIMIT %(limit)s FOR UPDATE OF i SKIP LOCKED
), claimed AS (
    UPDATE {items} i SET state = 'claimed', lane = %(lane)s, lease_until = %(lease)s, claims = i.claims + 1
    FROM picked WHERE i.id = picked.id
    RETURNING i.id, i.output_id, i.criterion_id, i.sample, i.claims
)
SELECT c.id, c.output_id, c.criterion_id, c.sample, c.claims - 1,
       o.case_id, o.agent_version, o.response, o.tool_calls, k.input, k.reference
FROM claimed c JOIN {outputs} o ON o.id = c.output_id JOIN {cases} k ON k.id = o.case_id
ORDER BY c.id
"""


@dataclass(slots=True)
class ClaimedCase:
    id: int
    input: str
    reference: str


@dataclass(slots=True)
class ClaimedOutput:
    id: int
    case_id: int
    agent_version: str
    response: str
    tool_calls: list
    case: ClaimedCase


@dataclass(slots=True)
class ClaimedItem:
    """What a lane needs of a claimed RunItem and its output, in the attribute names of the models.

    Slotted records rather than model instances: Model.__init__ for the item, its output and its case was
    a sixth of the feeder's CPU (py-spy), and the feeder shares the interpreter with the calling threads.
    """

    pk: int
    output_id: int
    criterion_id: int | None
    sample: int
    claims: int
    output: ClaimedOutput


def _claim_postgresql(lane: Lane, limit: int) -> list[ClaimedItem]:
    now = timezone.now()
    names = {
        "items": RunItem._meta.db_table,
        "runs": JudgeRun._meta.db_table,
        "outputs": Output._meta.db_table,
        "cases": Output._meta.get_field("case").related_model._meta.db_table,
    }
    params = {"run": lane.run.pk, "limit": limit, "lane": lane.lane_id, "lease": now + timedelta(seconds=LEASE_S)}
    rows: list = []
    with connection.cursor() as cursor:
        for which in ("i.state = 'pending'", "i.state = 'claimed' AND i.lease_until < %(now)s"):
            cursor.execute(_CLAIM_SQL.format(which=which, **names), {**params, "now": now})
            rows = cursor.fetchall()
            if rows:
                break
    return [
        ClaimedItem(
            pk=pk,
            output_id=output_id,
            criterion_id=criterion_id,
            sample=sample,
            claims=claims,
            output=ClaimedOutput(
                id=output_id,
                case_id=case_id,
                agent_version=version,
                response=response,
                tool_calls=_json(tool_calls) if isinstance(tool_calls, str) else (tool_calls or []),
                case=ClaimedCase(id=case_id, input=input_, reference=ref),
            ),
        )
        for pk, output_id, criterion_id, sample, claims, case_id, version, response, tool_calls, input_, ref in rows
    ]


def _json(text: str):
    # jsonb comes back as text; orjson reads it in a fraction of json's CPU. Numbers beyond 64 bits, which
    # jsonb can hold and orjson refuses, go through the standard module.
    try:
        return orjson.loads(text)
    except orjson.JSONDecodeError:
        return json.loads(text)


def release(lane: Lane, item: RunItem | ClaimedItem) -> None:
    RunItem.objects.filter(pk=item.pk, lane=lane.lane_id, state=RunItem.State.CLAIMED).update(
        state=RunItem.State.PENDING, lane="", lease_until=None
    )


# -- preparing, asking, writing ------------------------------------------------------------------------


def prepare(lane: Lane, items: list[RunItem] | list[ClaimedItem]) -> list[Work]:
    """Instrument verdicts and judging requests for a batch of items; cache hits resolved in one query."""
    batch = [_prepare_one(lane, item) for item in items]
    wanted = {w.common["cache_key"]: [c.key for c in w.model_criteria] for w in batch if w.request is not None}
    hits = cache.lookup(wanted, exclude_run=lane.run.pk)
    for work in batch:
        answers = hits.get(work.common.get("cache_key", ""))
        if work.request is None or answers is None:
            continue
        work.spend.cache_hit = True
        for criterion in work.model_criteria:
            answer = answers[criterion.key]
            work.rows.append(
                _verdict(
                    lane,
                    work,
                    criterion,
                    **work.common,
                    **answer,
                    cache_hit=True,
                    attempts=0,
                    evidence_found=_evidence_found(work.transcript, answer["outcome"], answer["evidence"]),
                )
            )
        work.request = None
    return batch


def _prepare_one(lane: Lane, item: RunItem | ClaimedItem) -> Work:
    output = item.output
    criteria = [lane.by_id[item.criterion_id]] if item.criterion_id else lane.criteria
    instruments = lane.config.instruments
    work = Work(item=item, rows=[], transcript=Transcript.of(output))
    if item.claims + 1 > MAX_CLAIMS:
        # Taken again and again without its verdicts ever being written: something about this item breaks
        # the write or kills the worker. Say so as ERROR instead of asking the model for ever.
        reason = f"claimed {item.claims + 1} times without its verdicts being written; see the worker logs"
        work.rows = [
            _verdict(
                lane,
                work,
                c,
                model_id=lane.config.model_id,
                outcome=VerdictOutcome.ERROR,
                error_kind=ErrorKind.INTERNAL,
                error_reason=reason,
            )
            for c in criteria
        ]
        return work
    for criterion in criteria:
        if criterion.key in instruments:
            work.rows.append(_instrument_row(lane, work, criterion, instruments[criterion.key]))
    work.model_criteria = [c for c in criteria if c.key not in instruments]
    if work.model_criteria:
        work.request = build_request(
            instruction=lane.run.rubric_version.instruction,
            criteria=[CriterionSpec(c.key, c.definition, c.pass_example, c.fail_example) for c in work.model_criteria],
            subject=_subject(output),
            template_version=lane.config.prompt_template_version,
        )
        key = cache.cache_key(
            rubric_hash=lane.run.rubric_version.content_hash,
            config_hash=lane.config.content_hash,
            request_hash=work.request.hash,
            sample=item.sample,
        )
        work.common = {"model_id": lane.config.model_id, "request_hash": work.request.hash, "cache_key": key}
    return work


def _subject(output: Output | ClaimedOutput) -> Subject:
    # Only the transcript and the reference: never the agent version or anything about who produced it.
    return Subject(
        input=output.case.input,
        reference=output.case.reference,
        tool_calls=list(output.tool_calls or []),
        response=output.response,
    )


def ask_model(lane: Lane, work: Work) -> bool:
    """Ask the judge (with retries) and add the verdicts to `work`; False if the run was cancelled meanwhile."""
    assert lane.backend is not None and work.request is not None
    answer = call_with_retries(
        lane.backend,
        work.request,
        max_retries=lane.config.max_retries,
        limiter=lane.limiter,
        sleep=lane.pause,
        cancelled=lane.cancelled.is_set,
        rng=lane.rng,
    )
    if answer.cancelled:
        return False
    work.spend.model_calls = answer.attempts
    keys = [c.key for c in work.model_criteria]
    if answer.result is None:
        assert answer.failure is not None
        parsed = parse.all_error(keys, answer.failure.kind, answer.error_reason())
        raw, tokens_in, tokens_out = "", None, None
    else:
        result = answer.result
        raw, tokens_in, tokens_out = result.raw, result.tokens_in, result.tokens_out
        work.spend.tokens_in, work.spend.tokens_out = tokens_in or 0, tokens_out or 0
        parsed = parse.parse_refusal(keys, result.refusal) if result.refusal else parse.parse_answer(raw, keys)
        if result.refusal and not raw:
            raw = result.refusal
    for criterion, p in zip(work.model_criteria, parsed, strict=True):
        work.rows.append(
            _verdict(
                lane,
                work,
                criterion,
                **work.common,
                outcome=p.outcome,
                evidence=p.evidence,
                evidence_found=_evidence_found(work.transcript, p.outcome, p.evidence),
                error_kind=p.error_kind,
                error_reason=p.error_reason,
                raw_output=raw,
                latency_ms=answer.latency_ms,
                tokens_in=tokens_in,
                tokens_out=tokens_out,
                attempts=answer.attempts,
            )
        )
    return True


def write(batch: list[Work]) -> None:
    """One transaction: every verdict of the batch (ON CONFLICT DO NOTHING) and its items marked done.

    Tried again when PostgreSQL picks it as a deadlock victim (its row locks can cross a heartbeat's).
    """
    rows = [row for work in batch for row in work.rows]
    for attempt in range(WRITE_ATTEMPTS):
        try:
            with transaction.atomic():
                insert_verdicts(rows)
                mark_done([(work.item.pk, work.spend) for work in batch])
            return
        except OperationalError:
            if attempt == WRITE_ATTEMPTS - 1:
                raise
            time.sleep(0.05 * (attempt + 1))


def insert_verdicts(rows: list[dict]) -> None:
    """INSERT ... ON CONFLICT DO NOTHING on (run, output, criterion, sample); `rows` as _verdict makes them.

    On PostgreSQL through COPY into a session-private staging table, then one INSERT ... SELECT: COPY
    encodes rows in the driver's C code, where a multi-row VALUES list or unnest() arrays were quoted
    value by value in Python (measured for 64 rows: 1.4 ms of CPU against 7-9 ms; a lane writes every
    verdict, so this was a fifth of its CPU).
    """
    if not rows:
        return
    now = timezone.now()
    for row in rows:
        row["created_at"] = now  # what auto_now_add would set
    if connection.vendor != "postgresql":
        Verdict.objects.bulk_create([Verdict(**row) for row in rows], ignore_conflicts=True)
        return
    names = [f.attname for f in _verdict_fields()]
    columns = ", ".join(f.column for f in _verdict_fields())
    with connection.cursor() as cursor:
        shape = f"SELECT {columns} FROM {Verdict._meta.db_table} WITH NO DATA"  # noqa: S608 - names from the model
        staging = _staging(cursor, "verdicts", shape)
        with cursor.copy(f"COPY {staging} ({columns}) FROM STDIN") as copy:
            for row in rows:
                copy.write_row([row[name] for name in names])
        cursor.execute(
            f"INSERT INTO {Verdict._meta.db_table} ({columns}) SELECT {columns} FROM {staging} "  # noqa: S608 - names from the model
            "ON CONFLICT (run_id, output_id, criterion_id, sample) DO NOTHING"
        )


def _staging(cursor, name: str, shape: str) -> str:
    """A temporary table of this database session, emptied at every commit (created the first time)."""
    table = f"judging_staging_{name}"
    cursor.execute(f"CREATE TEMP TABLE IF NOT EXISTS {table} ON COMMIT DELETE ROWS AS {shape}")
    return table


@functools.cache
def _verdict_fields() -> list:
    return [f for f in Verdict._meta.concrete_fields if not f.primary_key]


@functools.cache
def _verdict_defaults() -> dict:
    return {f.attname: f.get_default() for f in _verdict_fields()}


def mark_done(done: list[tuple[int, Spend]]) -> None:
    table = RunItem._meta.db_table
    if connection.vendor == "postgresql":
        # One UPDATE for the whole group, from rows staged with COPY (see insert_verdicts); the spend adds up
        # when an item was worked twice.
        with connection.cursor() as cursor:
            staging = _staging(
                cursor, "done", "SELECT 0::bigint AS id, 0 AS calls, 0 AS tin, 0 AS tout, false AS hit WITH NO DATA"
            )
            with cursor.copy(f"COPY {staging} (id, calls, tin, tout, hit) FROM STDIN") as copy:
                for pk, s in done:
                    copy.write_row((pk, s.model_calls, s.tokens_in, s.tokens_out, s.cache_hit))
            cursor.execute(
                f"UPDATE {table} AS i SET state = 'done', lease_until = NULL, finished_at = now(), "  # noqa: S608 - table names from the model
                "model_calls = i.model_calls + v.calls, tokens_in = i.tokens_in + v.tin, "
                f"tokens_out = i.tokens_out + v.tout, cache_hit = v.hit FROM {staging} AS v WHERE i.id = v.id"
            )
        return
    now = timezone.now()
    for pk, s in done:
        RunItem.objects.filter(pk=pk).update(
            state=RunItem.State.DONE,
            lease_until=None,
            finished_at=now,
            model_calls=F("model_calls") + s.model_calls,
            tokens_in=F("tokens_in") + s.tokens_in,
            tokens_out=F("tokens_out") + s.tokens_out,
            cache_hit=s.cache_hit,
        )


def _log_errors(lane: Lane, work: Work) -> None:
    for row in work.rows:
        if row["outcome"] == VerdictOutcome.ERROR:
            log.warning(
                "judge run %s: output %s criterion %s sample %s is ERROR (%s): %s",
                lane.run.pk,
                work.item.output_id,
                lane.by_id[row["criterion_id"]].key,
                row["sample"],
                row["error_kind"],
                row["error_reason"],
            )


def _verdict(lane: Lane, work: Work, criterion, **fields) -> dict:
    """A verdict row as a dict of the Verdict model's column values (attnames), defaults filled in.

    Plain dicts, not model instances: a lane makes one per criterion and item, and Model.__init__ with its
    foreign-key descriptors was a tenth of the lane's CPU (measured).
    """
    for name in ("evidence", "raw_output", "error_reason"):
        if "\x00" in fields.get(name, ""):
            # PostgreSQL text cannot hold NUL; a judge that emits one must not make the write fail for ever.
            fields[name] = fields[name].replace("\x00", "\ufffd")
    row = dict(_verdict_defaults())
    unknown = fields.keys() - row.keys()
    if unknown:
        raise TypeError(f"Verdict has no field {', '.join(sorted(unknown))}")
    row.update(
        run_id=lane.run.pk,
        output_id=work.item.output_id,
        rubric_version_id=lane.run.rubric_version_id,
        criterion_id=criterion.pk,
        judge_config_id=lane.config.pk,
        judge_config_hash=lane.config.content_hash,
        sample=work.item.sample,
        **fields,
    )
    return row


def _evidence_found(transcript: Transcript | None, outcome: str, evidence: str) -> bool | None:
    # Nothing to check on an ERROR; otherwise the quote must be in the transcript, like a person's.
    if outcome == VerdictOutcome.ERROR or transcript is None:
        return None
    return transcript.contains(evidence)


def _instrument_row(lane: Lane, work: Work, criterion, spec: dict) -> dict:
    started = time.perf_counter()
    output = work.item.output
    result = evaluate(spec, response=output.response, reference=output.case.reference)
    return _verdict(
        lane,
        work,
        criterion,
        model_id=f"instrument:{spec['kind']}",
        outcome=result.outcome,
        evidence=result.evidence,
        evidence_found=_evidence_found(work.transcript, result.outcome, result.evidence),
        raw_output=result.raw,
        latency_ms=ms_since(started),
        tokens_in=0,
        tokens_out=0,
        attempts=0,
    )


def _internal_error(lane: Lane, work: Work, exc: Exception) -> bool:
    reason = f"internal error while judging ({type(exc).__name__}); see the worker log"
    done = {row["criterion_id"] for row in work.rows}
    for criterion in work.model_criteria:
        if criterion.pk not in done:
            work.rows.append(
                _verdict(
                    lane,
                    work,
                    criterion,
                    model_id=lane.config.model_id,
                    outcome=VerdictOutcome.ERROR,
                    error_kind=ErrorKind.INTERNAL,
                    error_reason=reason,
                )
            )
    return True
