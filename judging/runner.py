"""Running a judge: plan a run, work it in lanes, write every verdict exactly once.

A run (eval set, optionally one agent version, x rubric version x judge config) is
planned as work items: one per output and sample (per-output mode: one model call
grades every criterion) or per output, criterion and sample (per-criterion mode).

Lanes work the items. A lane is one Celery task (or the calling process with
`--in-process`: the same code) running a pool of threads as wide as the judge
config's `max_concurrency`. Each thread claims one item at a time with a
conditional update under `SELECT ... FOR UPDATE SKIP LOCKED` and a lease that the
lane's heartbeat keeps renewing. Before each model call attempt the thread takes a
slot from the config's limiter (judging/limiter.py), which bounds calls in flight
across every lane and worker. Verdicts are inserted with ON CONFLICT DO NOTHING on
(run, output, criterion, sample) in the same transaction that marks the item done.

So a redelivered task, a second lane or a lane that lost its lease can never write a
verdict twice, and a worker killed mid-run loses nothing: its leases run out and any
live lane (each waits for foreign leases before it ends), or the lanes a newly started
worker enqueues (tasks.resume_runs), take its items again. Cancelling a run stops
every lane at its next item; items already answered keep their verdicts.

Before calling the model, an item looks for a cached verdict: same rubric version hash,
same judge config hash (model id included) and the same request (hash of the exact
prompt and schema), same sample. A re-run of unchanged data makes no model call.
"""

from __future__ import annotations

import logging
import os
import random
import socket
import threading
import time
import uuid
from collections import deque
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from datetime import timedelta

from django.db import connection, transaction
from django.db.models import F, Q
from django.utils import timezone

from labeling.models import EvalSet, Output, Rubric, RubricVersion
from labeling.transcript import Transcript

from . import parse
from .backends import CallFailed, CallResult, Misconfigured, ModelBackend, api_key_for, backend_for
from .backends.instruments import evaluate, validate_instruments
from .limiter import Limiter, LocalLimiter, limiter_for
from .models import (
    CACHEABLE_ERROR_KINDS,
    ErrorKind,
    JudgeConfig,
    JudgeRun,
    RunItem,
    Verdict,
    VerdictOutcome,
)
from .prompt import TEMPLATE_VERSIONS, CriterionSpec, JudgeRequest, Subject, build_request

log = logging.getLogger(__name__)

# Lanes per Celery run: two, so a run keeps going at full width when one worker dies
# (each lane's pool is as wide as the bound; the limiter keeps the total at the bound).
LANES_PER_RUN = 2
# An item's lease outlives 5 missed heartbeats: a live lane never loses its items to a
# hiccup, and a dead worker's items are taken again within about 10 seconds.
HEARTBEAT_S = 2.0
LEASE_S = 10.0
# Items a lane claims per query: fewer claim queries, while a lane never sits on much work another could do.
CLAIM_BATCH = 4
# How often the lane's first thread looks again when all that is left is held by other lanes.
WAIT_FOR_LEASES_S = 0.5
# Exponential backoff: attempt n waits between half and all of min(CAP, BASE * 2**n) ("equal jitter"),
# so retries from many threads spread out but still grow; 0.5 s doubling reaches the cap at the 7th retry.
BACKOFF_BASE_S = 0.5
BACKOFF_CAP_S = 30.0
# A Retry-After above this is not waited out inside a run: the verdict becomes ERROR and says so.
RETRY_AFTER_CAP_S = 120.0


# -- scope and planning ------------------------------------------------------------------------------


@dataclass(frozen=True)
class Scope:
    eval_set: EvalSet
    rubric_version: RubricVersion
    judge_config: JudgeConfig
    agent_version: str = ""


def resolve(*, eval_set: str, rubric: str, judge: str, agent_version: str = "") -> Scope:
    """Look the names up; Misconfigured with a message naming what is unknown."""
    found_set = EvalSet.objects.filter(name=eval_set).first()
    if found_set is None:
        raise Misconfigured(f"no eval set named {eval_set!r}{_known(EvalSet.objects.values_list('name', flat=True))}")
    rubric_version = resolve_rubric(rubric)
    config = JudgeConfig.objects.filter(name=judge).first()
    if config is None:
        raise Misconfigured(f"no judge config named {judge!r}{_known(JudgeConfig.objects.values_list('name', flat=True))}")
    return Scope(found_set, rubric_version, config, agent_version or "")


def resolve_rubric(ref: str) -> RubricVersion:
    name, sep, version = (ref or "").rpartition("@")
    if not sep or not name or not version:
        raise Misconfigured(f"rubric {ref!r} must be written NAME@VERSION, e.g. refund-support@1")
    found = RubricVersion.objects.select_related("rubric").filter(rubric__name=name, version=version).first()
    if found is None:
        if not Rubric.objects.filter(name=name).exists():
            raise Misconfigured(f"no rubric named {name!r}{_known(Rubric.objects.values_list('name', flat=True))}")
        versions = RubricVersion.objects.filter(rubric__name=name).values_list("version", flat=True)
        raise Misconfigured(f"rubric {name!r} has no version {version!r}{_known(versions)}")
    return found


def _known(names) -> str:
    names = list(names[:20])
    return f" (known: {', '.join(names)})" if names else " (there are none yet)"


def outputs_in(scope: Scope):
    outputs = Output.objects.filter(case__eval_set=scope.eval_set)
    if scope.agent_version:
        outputs = outputs.filter(agent_version=scope.agent_version)
    return outputs.order_by("case__case_id", "agent_version", "pk")


def check(scope: Scope, *, check_api_key: bool = True) -> None:
    """Misconfigured unless the run can start. `check_api_key`: the key variable is set in this process."""
    config, rv = scope.judge_config, scope.rubric_version
    if config.backend == JudgeConfig.Backend.IMPORTED:
        raise Misconfigured(
            f"judge {config.name} holds verdicts imported from elsewhere and cannot run; "
            "use import_verdicts for it, or a judge config with a model or instrument backend"
        )
    if config.prompt_template_version not in TEMPLATE_VERSIONS:
        raise Misconfigured(
            f"judge {config.name}: prompt template {config.prompt_template_version!r} is unknown "
            f"(known: {', '.join(TEMPLATE_VERSIONS)})"
        )
    if rv.status == RubricVersion.Status.RETIRED:
        raise Misconfigured(f"rubric {rv.ref} is retired; run a current version")
    keys = list(rv.criteria.order_by("order").values_list("key", flat=True))
    if not keys:
        raise Misconfigured(f"rubric {rv.ref} has no criteria")
    problems = validate_instruments(config.instruments)
    if problems:
        raise Misconfigured(f"judge {config.name}: " + "; ".join(problems))
    model_keys = [k for k in keys if k not in config.instruments]
    if config.backend == JudgeConfig.Backend.INSTRUMENT and model_keys:
        raise Misconfigured(
            f"judge {config.name} uses instruments only, and has none for {', '.join(model_keys)} of {rv.ref}"
        )
    if model_keys:
        if not config.model_id:
            raise Misconfigured(f"judge {config.name} has no model_id")
        if check_api_key:
            api_key_for(config)
    if not outputs_in(scope).exists():
        if scope.agent_version:
            versions = (
                Output.objects.filter(case__eval_set=scope.eval_set)
                .order_by()
                .values_list("agent_version", flat=True)
                .distinct()
            )
            raise Misconfigured(
                f"eval set {scope.eval_set.name} has no outputs of agent version {scope.agent_version!r}"
                f"{_known(sorted(versions))}"
            )
        raise Misconfigured(f"eval set {scope.eval_set.name} has no outputs to judge")


def create_run(scope: Scope, *, mode: str, started_by=None, check_api_key: bool = True) -> JudgeRun:
    """Check the scope and plan the run's items, in one transaction."""
    check(scope, check_api_key=check_api_key)
    config = scope.judge_config
    output_ids = list(outputs_in(scope).values_list("pk", flat=True))
    criteria = list(scope.rubric_version.criteria.order_by("order"))
    per_criterion = config.mode == JudgeConfig.Mode.PER_CRITERION
    with transaction.atomic():
        run = JudgeRun.objects.create(
            eval_set=scope.eval_set,
            agent_version=scope.agent_version,
            rubric_version=scope.rubric_version,
            judge_config=config,
            started_by=started_by,
            mode=mode,
            expected_verdicts=len(output_ids) * len(criteria) * config.samples,
        )
        items = [
            RunItem(run=run, output_id=output_id, criterion=criterion, sample=sample)
            for output_id in output_ids
            for criterion in (criteria if per_criterion else [None])
            for sample in range(config.samples)
        ]
        RunItem.objects.bulk_create(items, batch_size=2000)
        JudgeRun.objects.filter(pk=run.pk).update(total_items=len(items))
        run.total_items = len(items)
    log.info("judge run %s planned: %s items, %s verdicts expected", run.pk, run.total_items, run.expected_verdicts)
    return run


def start_run(scope: Scope, *, started_by=None, check_api_key: bool = True) -> JudgeRun:
    """Create a run and enqueue its lanes on Celery once the transaction commits."""
    run = create_run(scope, mode=JudgeRun.Mode.CELERY, started_by=started_by, check_api_key=check_api_key)
    transaction.on_commit(lambda: enqueue_lanes(run.pk))
    return run


def enqueue_lanes(run_id: int, lanes: int = LANES_PER_RUN) -> None:
    from .tasks import run_lane

    try:
        for _ in range(lanes):
            run_lane.delay(run_id)
    except Exception as exc:  # the broker is down: say so on the run instead of leaving it queued for ever
        log.error("could not enqueue judge run %s: %s", run_id, exc)
        fail_run(run_id, f"could not reach the Celery broker to start the run: {type(exc).__name__}")
        raise


def run_in_process(run: JudgeRun, **kwargs) -> str:
    """Work the whole run in this process (same code, limits and retries as a lane; no broker)."""
    return work_lane(run.pk, in_process=True, **kwargs)


def cancel_run(run: JudgeRun) -> bool:
    """Stop the run; lanes notice at their next item. False if it had already ended."""
    changed = JudgeRun.objects.filter(pk=run.pk, status__in=JudgeRun.ACTIVE).update(
        status=JudgeRun.Status.CANCELLED, finished_at=timezone.now()
    )
    return changed == 1


def fail_run(run_id: int, message: str) -> None:
    JudgeRun.objects.filter(pk=run_id, status__in=JudgeRun.ACTIVE).update(
        status=JudgeRun.Status.FAILED, error=message, finished_at=timezone.now()
    )


def unfinished_runs() -> list[int]:
    return list(
        JudgeRun.objects.filter(status__in=JudgeRun.ACTIVE, mode=JudgeRun.Mode.CELERY).values_list("pk", flat=True)
    )


def finish_if_complete(run_id: int) -> str:
    """Mark the run done once every item is; return its status."""
    if not RunItem.objects.filter(run_id=run_id).exclude(state=RunItem.State.DONE).exists():
        JudgeRun.objects.filter(pk=run_id, status=JudgeRun.Status.RUNNING).update(
            status=JudgeRun.Status.DONE, finished_at=timezone.now()
        )
    return JudgeRun.objects.filter(pk=run_id).values_list("status", flat=True).first() or "gone"


# -- retries -------------------------------------------------------------------------------------------


def backoff_delay(attempt: int, retry_after: float | None, rng: random.Random) -> float:
    """Seconds to wait after failed attempt `attempt` (0-based): equal-jitter exponential, never before Retry-After."""
    ceiling = min(BACKOFF_CAP_S, BACKOFF_BASE_S * 2**attempt)
    backoff = ceiling / 2 + rng.uniform(0, ceiling / 2)
    if retry_after is None:
        return backoff
    # Spread the herd that got the same Retry-After by up to 10%, but never earlier than asked.
    return max(retry_after * (1 + rng.uniform(0, 0.1)), backoff)


@dataclass
class Answer:
    result: CallResult | None
    failure: CallFailed | None
    attempts: int
    latency_ms: int | None
    cancelled: bool = False

    def error_reason(self) -> str:
        assert self.failure is not None
        if self.failure.retryable and self.attempts > 1:
            return f"{self.failure.reason} (gave up after {self.attempts} attempts)"
        return self.failure.reason


def call_with_retries(
    backend: ModelBackend,
    request: JudgeRequest,
    *,
    max_retries: int,
    limiter: Limiter,
    sleep: Callable[[float], object],
    cancelled: Callable[[], bool],
    rng: random.Random,
) -> Answer:
    failure: CallFailed | None = None
    latency_ms: int | None = None
    attempts = 0
    for attempt in range(max_retries + 1):
        if cancelled():
            return Answer(None, failure, attempts, latency_ms, cancelled=True)
        with limiter.slot():
            attempts += 1
            started = time.perf_counter()
            try:
                result = backend.call(request)
            except CallFailed as exc:
                failure = exc
            else:
                return Answer(result, None, attempts, _ms_since(started))
            latency_ms = _ms_since(started)
        assert failure is not None
        log.info("judge call attempt %s failed: %s", attempts, failure.reason)
        if failure.retry_after and failure.retry_after > RETRY_AFTER_CAP_S:
            reason = (
                f"{failure.reason}; the server asked to wait {failure.retry_after:.0f} s, "
                f"longer than the {RETRY_AFTER_CAP_S:.0f} s a run waits"
            )
            failure = CallFailed(failure.kind, reason, retryable=False)
            break
        if failure.kind == "rate_limit" and failure.retry_after:
            limiter.cool_down(failure.retry_after)
        if not failure.retryable or attempt == max_retries:
            break
        sleep(backoff_delay(attempt, failure.retry_after, rng))
    return Answer(None, failure, attempts, latency_ms)


def _ms_since(started: float) -> int:
    return round((time.perf_counter() - started) * 1000)


# -- lanes ---------------------------------------------------------------------------------------------


@dataclass
class Lane:
    run: JudgeRun
    config: JudgeConfig
    criteria: list  # Criterion rows of the rubric version, in rubric order
    backend: ModelBackend | None
    limiter: Limiter
    lane_id: str
    sleep: Callable[[float], object] | None = None
    cancelled: threading.Event = field(default_factory=threading.Event)
    rng: random.Random = field(default_factory=random.Random)

    def __post_init__(self) -> None:
        self.by_id = {c.pk: c for c in self.criteria}
        self._claimed: deque[RunItem] = deque()
        self._claim_lock = threading.Lock()

    def next_item(self) -> RunItem | None:
        """The next item for one of this lane's threads: claimed a few at a time (one query per batch)."""
        with self._claim_lock:
            if not self._claimed:
                self._claimed.extend(claim(self, CLAIM_BATCH))
            return self._claimed.popleft() if self._claimed else None

    def release_unstarted(self) -> None:
        with self._claim_lock:
            for item in self._claimed:
                release(self, item)
            self._claimed.clear()

    def pause(self, seconds: float) -> None:
        # A backoff ends early when the run is cancelled.
        if self.sleep is not None:
            self.sleep(seconds)
        else:
            self.cancelled.wait(seconds)


def work_lane(
    run_id: int,
    *,
    in_process: bool = False,
    limiter: Limiter | None = None,
    sleep: Callable[[float], object] | None = None,
    rng: random.Random | None = None,
) -> str:
    """Work a run's items until none is left (or the run stops); return the run's status."""
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
    lane = Lane(
        run=run,
        config=config,
        criteria=criteria,
        backend=backend,
        limiter=limiter or (LocalLimiter(config.max_concurrency) if in_process else limiter_for(config, in_process=False)),
        lane_id=f"{socket.gethostname()[:30]}:{os.getpid()}:{uuid.uuid4().hex[:8]}",
        sleep=sleep,
        rng=rng or random.Random(),
    )
    # Instruments need no parallelism; model calls get as many threads as the bound allows.
    threads = max(1, min(config.max_concurrency if needs_model else 1, run.total_items))
    stop_heartbeat = threading.Event()
    heartbeat = threading.Thread(target=_heartbeat, args=(lane, stop_heartbeat), daemon=True)
    heartbeat.start()
    try:
        with ThreadPoolExecutor(max_workers=threads, thread_name_prefix=f"judge-run-{run_id}") as pool:
            for future in [pool.submit(_worker, lane, i) for i in range(threads)]:
                future.result()
    finally:
        lane.release_unstarted()  # claimed but never started (the run was cancelled): free them at once
        stop_heartbeat.set()
        heartbeat.join()
    status = finish_if_complete(run_id)
    log.info("judge run %s lane %s ended; run is %s", run_id, lane.lane_id, status)
    return status


def _heartbeat(lane: Lane, stop: threading.Event) -> None:
    try:
        while not stop.wait(HEARTBEAT_S):
            RunItem.objects.filter(run_id=lane.run.pk, lane=lane.lane_id, state=RunItem.State.CLAIMED).update(
                lease_until=timezone.now() + timedelta(seconds=LEASE_S)
            )
            status = JudgeRun.objects.filter(pk=lane.run.pk).values_list("status", flat=True).first()
            if status is not None and status != JudgeRun.Status.RUNNING:  # cancelled (or failed) meanwhile
                lane.cancelled.set()
    finally:
        connection.close()


def _worker(lane: Lane, index: int) -> None:
    try:
        while not lane.cancelled.is_set():
            item = lane.next_item()
            if item is None:
                # Only the first thread stays, to wait for items other lanes hold (they may have died).
                if index != 0 or not _held_elsewhere(lane):
                    return
                lane.cancelled.wait(WAIT_FOR_LEASES_S)
                continue
            try:
                process(lane, item)
            except Exception as exc:  # a bug or a lost database: never let one item end the lane silently
                log.exception("judge run %s: item %s failed", lane.run.pk, item.pk)
                _write_internal_error(lane, item, exc)
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


def claim(lane: Lane, limit: int = 1) -> list[RunItem]:
    """Take up to `limit` pending items (or items whose lease ran out), outputs loaded; [] if the run stopped."""
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


def release(lane: Lane, item: RunItem) -> None:
    RunItem.objects.filter(pk=item.pk, lane=lane.lane_id, state=RunItem.State.CLAIMED).update(
        state=RunItem.State.PENDING, lane="", lease_until=None
    )


# -- one item ------------------------------------------------------------------------------------------


@dataclass
class Spend:
    model_calls: int = 0
    tokens_in: int = 0
    tokens_out: int = 0
    cache_hit: bool = False


def process(lane: Lane, item: RunItem) -> None:
    output = item.output
    criteria = [lane.by_id[item.criterion_id]] if item.criterion_id else lane.criteria
    instruments = lane.config.instruments
    transcript = Transcript.of(output)
    rows = [_instrument_row(lane, output, transcript, item.sample, c) for c in criteria if c.key in instruments]
    spend = Spend()
    model_criteria = [c for c in criteria if c.key not in instruments]
    if model_criteria:
        model_rows = _model_rows(lane, output, transcript, item.sample, model_criteria, spend)
        if model_rows is None:  # cancelled between attempts: leave the item for nobody, write nothing
            release(lane, item)
            return
        rows.extend(model_rows)
    write(lane, item, rows, spend)


def write(lane: Lane, item: RunItem, rows: list[Verdict], spend: Spend) -> None:
    with transaction.atomic():
        # ON CONFLICT DO NOTHING on (run, output, criterion, sample): whoever writes first wins, once.
        Verdict.objects.bulk_create(rows, ignore_conflicts=True)
        RunItem.objects.filter(pk=item.pk).update(
            state=RunItem.State.DONE,
            lease_until=None,
            finished_at=timezone.now(),
            model_calls=F("model_calls") + spend.model_calls,
            tokens_in=F("tokens_in") + spend.tokens_in,
            tokens_out=F("tokens_out") + spend.tokens_out,
            cache_hit=spend.cache_hit,
        )
    for row in rows:
        if row.outcome == VerdictOutcome.ERROR:
            log.warning(
                "judge run %s: output %s criterion %s sample %s is ERROR (%s): %s",
                lane.run.pk,
                row.output_id,
                row.criterion.key,
                row.sample,
                row.error_kind,
                row.error_reason,
            )


def _verdict(lane: Lane, output: Output, criterion, sample: int, **fields) -> Verdict:
    return Verdict(
        run=lane.run,
        output=output,
        rubric_version=lane.run.rubric_version,
        criterion=criterion,
        judge_config=lane.config,
        judge_config_hash=lane.config.content_hash,
        sample=sample,
        **fields,
    )


def _evidence_found(transcript: Transcript, outcome: str, evidence: str) -> bool | None:
    # Nothing to check on an ERROR; otherwise the quote must be in the transcript like a person's.
    if outcome == VerdictOutcome.ERROR:
        return None
    return transcript.contains(evidence)


def _instrument_row(lane: Lane, output: Output, transcript: Transcript, sample: int, criterion) -> Verdict:
    spec = lane.config.instruments[criterion.key]
    started = time.perf_counter()
    result = evaluate(spec, response=output.response, reference=output.case.reference)
    return _verdict(
        lane,
        output,
        criterion,
        sample,
        model_id=f"instrument:{spec['kind']}",
        outcome=result.outcome,
        evidence=result.evidence,
        evidence_found=_evidence_found(transcript, result.outcome, result.evidence),
        raw_output=result.raw,
        latency_ms=_ms_since(started),
        tokens_in=0,
        tokens_out=0,
        attempts=0,
    )


def cache_key(*, rubric_hash: str, config_hash: str, request_hash: str, sample: int) -> str:
    import hashlib

    return hashlib.sha256(f"{rubric_hash}:{config_hash}:{request_hash}:{sample}".encode()).hexdigest()


def _subject(output: Output) -> Subject:
    # Only the transcript and the reference: never the agent version or anything about who produced it.
    return Subject(
        input=output.case.input,
        reference=output.case.reference,
        tool_calls=list(output.tool_calls or []),
        response=output.response,
    )


def _model_rows(
    lane: Lane, output: Output, transcript: Transcript, sample: int, criteria: list, spend: Spend
) -> list[Verdict] | None:
    request = build_request(
        instruction=lane.run.rubric_version.instruction,
        criteria=[CriterionSpec(c.key, c.definition, c.pass_example, c.fail_example) for c in criteria],
        subject=_subject(output),
        template_version=lane.config.prompt_template_version,
    )
    key = cache_key(
        rubric_hash=lane.run.rubric_version.content_hash,
        config_hash=lane.config.content_hash,
        request_hash=request.hash,
        sample=sample,
    )
    common = {"model_id": lane.config.model_id, "request_hash": request.hash, "cache_key": key}
    cached = cached_answers(key, [c.key for c in criteria], exclude_run=lane.run.pk)
    if cached is not None:
        spend.cache_hit = True
        return [
            _verdict(
                lane,
                output,
                c,
                sample,
                **common,
                **cached[c.key],
                cache_hit=True,
                attempts=0,
                evidence_found=_evidence_found(transcript, cached[c.key]["outcome"], cached[c.key]["evidence"]),
            )
            for c in criteria
        ]
    assert lane.backend is not None
    answer = call_with_retries(
        lane.backend,
        request,
        max_retries=lane.config.max_retries,
        limiter=lane.limiter,
        sleep=lane.pause,
        cancelled=lane.cancelled.is_set,
        rng=lane.rng,
    )
    if answer.cancelled:
        return None
    spend.model_calls = answer.attempts
    keys = [c.key for c in criteria]
    if answer.result is None:
        assert answer.failure is not None
        parsed = parse.all_error(keys, answer.failure.kind, answer.error_reason())
        raw, tokens_in, tokens_out = "", None, None
    else:
        result = answer.result
        raw, tokens_in, tokens_out = result.raw, result.tokens_in, result.tokens_out
        spend.tokens_in, spend.tokens_out = tokens_in or 0, tokens_out or 0
        parsed = parse.parse_refusal(keys, result.refusal) if result.refusal else parse.parse_answer(raw, keys)
        if result.refusal and not raw:
            raw = result.refusal
    return [
        _verdict(
            lane,
            output,
            c,
            sample,
            **common,
            outcome=p.outcome,
            evidence=p.evidence,
            evidence_found=_evidence_found(transcript, p.outcome, p.evidence),
            error_kind=p.error_kind,
            error_reason=p.error_reason,
            raw_output=raw,
            latency_ms=answer.latency_ms,
            tokens_in=tokens_in,
            tokens_out=tokens_out,
            attempts=answer.attempts,
        )
        for c, p in zip(criteria, parsed, strict=True)
    ]


CACHED_FIELDS = ("outcome", "evidence", "error_kind", "error_reason", "raw_output", "latency_ms", "tokens_in",
                 "tokens_out")


def cached_answers(key: str, keys: list[str], *, exclude_run: int) -> dict[str, dict] | None:
    """The most recent earlier run's answers for this cache key, by criterion key; None unless all are there."""
    rows = list(
        Verdict.objects.filter(cache_key=key, error_kind__in=CACHEABLE_ERROR_KINDS)
        .exclude(run_id=exclude_run)
        .order_by("-run_id")
        .values("run_id", "criterion__key", *CACHED_FIELDS)[: max(len(keys) * 4, 8)]
    )
    if not rows:
        return None
    latest = {r["criterion__key"]: {f: r[f] for f in CACHED_FIELDS} for r in rows if r["run_id"] == rows[0]["run_id"]}
    if not set(keys) <= set(latest):
        return None
    return latest


def _write_internal_error(lane: Lane, item: RunItem, exc: Exception) -> None:
    try:
        output = Output.objects.select_related("case").get(pk=item.output_id)
        criteria = [lane.by_id[item.criterion_id]] if item.criterion_id else lane.criteria
        reason = f"internal error while judging ({type(exc).__name__}); see the worker log"
        rows = [
            _verdict(
                lane,
                output,
                c,
                item.sample,
                model_id=lane.config.model_id,
                outcome=VerdictOutcome.ERROR,
                error_kind=ErrorKind.INTERNAL,
                error_reason=reason,
            )
            for c in criteria
        ]
        write(lane, item, rows, Spend())
    except Exception:  # the database is gone too: the item's lease runs out and another lane retries it
        log.exception("judge run %s: could not record the failure of item %s", lane.run.pk, item.pk)
