"""A lane: one worker's share of a judge run (a Celery task), or the whole run with --in-process.

The lane's own thread does all the database work. It claims a few items (SELECT ... FOR UPDATE SKIP
LOCKED, with a lease: item_leases.py), answers at once what instruments or the cache can answer, and hands every
item that needs the model to a thread pool as wide as the lane's share of the judge config's
max_concurrency; each call attempt also holds a slot of the config's limiter, so the bound holds
across lanes and workers. Whenever answers come in it claims more, so that every pool thread has its
next item waiting, and writes the finished items: their verdicts and their "done" in one transaction.
Every HEARTBEAT_S it renews its leases and looks whether the run was cancelled. In a probe's arm of a
probe run (judging/probes/) the judge is shown, and its quotes are checked against, the probed transcript
stored for the output (ProbedOutput) instead of the output's own.

Crash safety: a verdict and its item's "done" are committed together, so an item is either done
with all its verdicts or still claimed; an item whose lane stopped renewing its lease is claimed
again by any live lane. An answer a dead lane had not written is asked again, and written once:
verdicts are unique on (run, output, criterion, sample), and a second write of one is ignored.

Only the judge's answers become verdicts: an outage of our own infrastructure never does. A lane waits
for an unreachable limiter (judging/limiter.py, bounded); what it still cannot do goes back to pending,
and the run is marked failed with the reason. So is every unexpected exception in a lane, in its own
thread or a pool thread, and a config the operator's allowlists refuse: a run never stays "running"
because a lane died of something it did not expect, and never ends "done" with our failures as verdicts.
"""

from __future__ import annotations

import logging
import os
import random
import socket
import threading
import time
import uuid
from collections.abc import Callable
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from dataclasses import dataclass, field
from functools import cached_property

from django.conf import settings
from django.db import DatabaseError, transaction
from django.db.models import F
from django.utils import timezone

from evals.models import Criterion
from evals.transcript import Transcript

from . import cache, item_leases, parse, run_status
from .allowlist import key_var_refusal
from .backends import Misconfigured, ModelBackend, config_refusal, redact
from .backends.factory import backend_for
from .backends.instruments import evaluate, with_precedents
from .limiter import Limiter, LimiterUnavailable, limiter_for
from .models import ErrorKind, JudgeConfig, JudgeRun, ProbedOutput, RunItem, Verdict, VerdictOutcome
from .probes.registry import ORIGINAL
from .prompt import JudgeRequest, request_for
from .retry import call_with_retries, ms_since

log = logging.getLogger(__name__)

# Lanes per Celery run: two, so a run spreads over two worker processes and keeps going, at half width, when
# one worker dies; the runner queues this many, and each takes this share of the concurrency bound. Give
# workers --concurrency >= 2 so both lanes run at once.
LANES_PER_RUN = 2
# How often a lane renews its items' leases (item_leases.LEASE_S, several heartbeats) and looks for a cancel.
HEARTBEAT_S = 2.0
# An item claimed more often than this without being written fails the run (see _prepare_one): a dead
# worker costs an item one extra claim (a cancel or an outage none), so only something that breaks every
# attempt gets here.
MAX_CLAIMS = 5
# The longest reason a failed run records (an exception's text can be long).
MAX_REASON_CHARS = 1000
# How often a lane with nothing to do looks again while other lanes still hold items (they may be dead).
WAIT_FOR_LEASES_S = 0.5
# Items a lane keeps handed to its pool, per pool thread: one being asked and one waiting, so that a thread
# whose answer came in starts its next call at once instead of waiting for the lane's thread to claim one.
QUEUED_PER_THREAD = 2


@dataclass
class Work:
    """One claimed item on its way: its verdicts so far, and the request if the model must still answer."""

    lane: Lane
    item: RunItem
    verdicts: list[Verdict] = field(default_factory=list)
    request: JudgeRequest | None = None
    model_criteria: list[Criterion] = field(default_factory=list)
    common: dict = field(default_factory=dict)  # model_id, request_hash, cache_key of the model's verdicts
    model_calls: int = 0
    tokens_in: int = 0
    tokens_out: int = 0
    cache_hit: bool = False
    probed: Transcript | None = None  # in a probe's arm: what the judge is shown instead of the output

    @cached_property
    def transcript(self) -> Transcript:
        """What is graded, and where quotes are looked for: the output's transcript, or its probed one."""
        return self.probed or Transcript.of(self.item.output)

    def add(self, criterion: Criterion, **fields) -> None:
        """A verdict of this item for `criterion`; `fields` are the Verdict's own (outcome, evidence, ...)."""
        for name in ("evidence", "raw_output", "error_reason"):
            if "\x00" in fields.get(name, ""):
                # PostgreSQL text cannot hold NUL; a judge that emits one must not make the write fail for ever.
                fields[name] = fields[name].replace("\x00", "\ufffd")
        # Nothing to check on an ERROR; otherwise the quote must be in the transcript, like a person's.
        error = fields["outcome"] == VerdictOutcome.ERROR
        run, config = self.lane.run, self.lane.config
        self.verdicts.append(
            Verdict(
                run_id=run.pk,
                output_id=self.item.output_id,
                rubric_version_id=run.rubric_version_id,
                criterion_id=criterion.pk,
                judge_config_id=config.pk,
                judge_config_hash=config.content_hash,
                sample=self.item.sample,
                evidence_found=None if error else self.transcript.contains(fields.get("evidence", "")),
                probe=run.probe,
                **fields,
            )
        )

    def add_missing(self, criterion: Criterion, reason: str) -> None:
        model_id, kind = self.lane.config.model_id, ErrorKind.INTERNAL
        self.add(criterion, model_id=model_id, outcome=VerdictOutcome.ERROR, error_kind=kind, error_reason=reason)


class RunFailed(Exception):
    """The lane cannot go on with this run; the message says why, in the lead's words, and becomes run.error."""


@dataclass
class Lane:
    run: JudgeRun
    config: JudgeConfig
    criteria: list[Criterion]  # of the rubric version, in rubric order
    backend: ModelBackend | None
    limiter: Limiter
    threads: int
    lane_id: str = field(default_factory=lambda: f"{socket.gethostname()[:30]}:{os.getpid()}:{uuid.uuid4().hex[:8]}")
    sleep: Callable[[float], object] | None = None
    rng: random.Random = field(default_factory=random.Random)
    cancelled: threading.Event = field(default_factory=threading.Event)
    failure: str = ""  # why the lane stopped the run (set once, by the lane's thread)

    def __post_init__(self) -> None:
        self.by_id = {c.pk: c for c in self.criteria}
        self.sleep = self.sleep or self.cancelled.wait  # a backoff ends early when the run is cancelled


def work_lane(
    run_id: int,
    *,
    in_process: bool = False,
    limiter: Limiter | None = None,
    sleep: Callable[[float], object] | None = None,
) -> str | None:
    """Work a run's items until none is left (or the run stops); the run's status (None if it is gone)."""
    run = JudgeRun.objects.select_related("judge_config", "rubric_version__rubric").filter(pk=run_id).first()
    if run is None or not run.is_active:
        return run.status if run else None
    if run_status.mark_running(run_id):
        log.info("judge run %s started", run_id)
    config = run.judge_config
    criteria = list(run.rubric_version.criteria.order_by("order"))
    needs_model = any(c.key not in config.instruments for c in criteria)
    # Instruments need no parallelism. Model calls: in process, one lane has the whole bound; on Celery the
    # lanes of a run split it, so that together they just fill it (the shared limiter holds the bound when
    # more lanes join: a resumed run, two runs of one config).
    share = config.max_concurrency if in_process else -(-config.max_concurrency // LANES_PER_RUN)
    try:
        # A config stored before a rule, or one the operator's lists no longer allow: the run says why and
        # sends nothing (rather than an ERROR per item, which would read as the judge's answer).
        refusal = config_refusal(config) if needs_model else None
        if refusal:
            raise Misconfigured(refusal)
        backend = backend_for(config) if needs_model else None
        limiter = limiter or limiter_for(config, in_process=in_process)
    except Misconfigured as exc:
        run_status.fail(run_id, str(exc))
        log.error("judge run %s failed: %s", run_id, exc)
        return JudgeRun.Status.FAILED
    except DatabaseError:
        raise
    except Exception as exc:  # e.g. an SDK refusing a value no rule foresaw: say so instead of staying "running"
        log.exception("judge run %s: the lane could not start", run_id)
        run_status.fail(run_id, failure_reason(config, exc))
        return JudgeRun.Status.FAILED
    lane = Lane(run, config, criteria, backend, limiter, threads=share if needs_model else 1, sleep=sleep)
    with ThreadPoolExecutor(max_workers=lane.threads, thread_name_prefix=f"judge-run-{run_id}") as pool:
        try:
            _work(lane, pool)
        except DatabaseError:
            raise  # the database is gone: nothing can be recorded; the task runs again (tasks.py)
        except RunFailed as exc:
            stop(lane, str(exc))
        except Exception as exc:
            log.exception("judge run %s lane %s stopped", run_id, lane.lane_id)
            stop(lane, failure_reason(config, exc))
        finally:
            lane.cancelled.set()  # on the way out for whatever reason: calls still in flight stop retrying
    if lane.failure:
        # After the pool is shut down: no call of this lane is in flight any more.
        item_leases.release_all(run_id, lane.lane_id)
        run_status.fail(run_id, lane.failure)
        log.error("judge run %s failed: %s", run_id, lane.failure)
    status = run_status.finish_if_complete(run_id)
    log.info("judge run %s lane %s ended; run is %s", run_id, lane.lane_id, status)
    return status


def _work(lane: Lane, pool: ThreadPoolExecutor) -> None:
    asking: dict[Future, Work] = {}
    last_beat = time.monotonic()
    while True:
        if time.monotonic() - last_beat >= HEARTBEAT_S:
            last_beat = time.monotonic()
            if not item_leases.renew(lane.run.pk, lane.lane_id):
                lane.cancelled.set()
        claimed = []
        room = QUEUED_PER_THREAD * lane.threads - len(asking)
        if not lane.cancelled.is_set() and room > 0:
            claimed = item_leases.claim(lane.run.pk, lane.lane_id, room)
        finished = []
        for work in prepare(lane, claimed):
            if work.request is None:
                finished.append(work)  # instruments or the cache answered it: no model call
            else:
                asking[pool.submit(ask_model, lane, work)] = work
        if not asking and not finished:
            if (
                lane.cancelled.is_set()
                or not RunItem.objects.filter(run_id=lane.run.pk).exclude(state=RunItem.State.DONE).exists()
            ):
                return
            # What is left is claimed by other lanes: wait, and take it over if their leases run out.
            lane.cancelled.wait(WAIT_FOR_LEASES_S)
            continue
        # Wait for an answer (not when there is already something to write: claim again at once after it).
        answered, _ = wait(asking, timeout=0 if finished else HEARTBEAT_S, return_when=FIRST_COMPLETED)
        for future in answered:
            work = asking.pop(future)
            try:
                answered_it = future.result()
            except Exception as exc:  # LimiterUnavailable, or a bug: the run fails, saying why; no verdict
                log.exception("judge run %s: item %s failed", lane.run.pk, work.item.pk)
                stop(lane, failure_reason(lane.config, exc))
                answered_it = False
            if answered_it:
                finished.append(work)
            else:  # cancelled, or the lane stopped: nothing to write, the item is free for a later run of it
                item_leases.release(lane.lane_id, work.item)
        write(lane, finished)


def stop(lane: Lane, reason: str) -> None:
    """Stop claiming and asking: the run will be marked failed with `reason` (the first one, if several)."""
    if not lane.failure:
        lane.failure = reason
    lane.cancelled.set()


def failure_reason(config: JudgeConfig, exc: Exception) -> str:
    """What a failed run says about an exception: its own words for ours, the type and text for anything else,
    the key scrubbed (an SDK error may echo a header) and the length bounded."""
    if isinstance(exc, LimiterUnavailable):
        text = f"{exc}; the items not judged yet are pending: start the run again once it is back"
    elif isinstance(exc, RunFailed):
        text = str(exc)
    else:
        text = f"a lane stopped on an unexpected error ({type(exc).__name__}: {exc}); see the worker log"
    # Only a variable judges may read is read, even to scrub it (a lane never runs with another one anyway).
    readable = config.api_key_env and not key_var_refusal(config.api_key_env, settings.JUDGE_KEY_VARS)
    text = redact(text, os.environ.get(config.api_key_env) if readable else None)
    return text if len(text) <= MAX_REASON_CHARS else text[: MAX_REASON_CHARS - 1] + "\u2026"


def prepare(lane: Lane, items: list[RunItem]) -> list[Work]:
    """Instrument verdicts and judging requests for a batch of items; cache hits resolved in one query."""
    probed = _probed_transcripts(lane, items)
    batch = [_prepare_one(lane, item, probed) for item in items]
    wanted = {w.common["cache_key"]: [c.key for c in w.model_criteria] for w in batch if w.request is not None}
    hits = cache.lookup(wanted, exclude_run=lane.run.pk)
    for work in batch:
        answers = hits.get(work.common.get("cache_key", ""))
        if work.request is not None and answers is not None:
            work.cache_hit, work.request = True, None
            for c in work.model_criteria:
                work.add(c, **work.common, **answers[c.key], cache_hit=True)
    return batch


def _probed_transcripts(lane: Lane, items: list[RunItem]) -> dict[int, Transcript] | None:
    """In a probe's arm, the probed transcripts of these items' outputs, by output id (None in any other run)."""
    if lane.run.probe in ("", ORIGINAL) or not items:
        return None
    rows = ProbedOutput.objects.filter(run_id=lane.run.pk, output_id__in={i.output_id for i in items})
    return {
        p.output_id: Transcript(input=p.input, tool_calls=list(p.tool_calls or []), response=p.response) for p in rows
    }


def _prepare_one(lane: Lane, item: RunItem, probed: dict[int, Transcript] | None = None) -> Work:
    criteria = [lane.by_id[item.criterion_id]] if item.criterion_id else lane.criteria
    instruments = lane.config.instruments
    work = Work(lane, item, probed=probed.get(item.output_id) if probed is not None else None)
    where = f"output {item.output_id} (case {item.output.case.case_id})"
    if item.claims + 1 > MAX_CLAIMS:
        # Taken again and again without its verdicts ever being written: something about this item breaks
        # the write or kills the worker. Stop the run saying so, instead of asking the model for ever (and
        # rather than an ERROR verdict: the judge said nothing wrong).
        raise RunFailed(
            f"{where} was claimed {item.claims + 1} times without its verdicts being written; see the worker logs"
        )
    if probed is not None and work.probed is None:
        # A fact about this item's data, not an outage: the arm cannot show it to the judge. ERROR for it
        # alone, so the probe's results count it as such (never a flip), and the arm's other items go on.
        for criterion in criteria:
            work.add_missing(criterion, f"the {lane.run.probe} transcript of this output is missing from the probe run")
        return work
    output, shown = item.output, work.transcript
    for criterion in (c for c in criteria if c.key in instruments):
        spec, started = instruments[criterion.key], time.perf_counter()
        result = evaluate(spec, response=shown.response, reference=output.case.reference)
        # A version derived with examples: they are precedents after the rule (instruments.with_precedents).
        examples = lane.config.guidance.get(criterion.key, {}).get("examples", [])
        if examples:
            result = with_precedents(result, response=shown.response, examples=examples)
        work.add(
            criterion,
            model_id=f"instrument:{spec['kind']}",
            outcome=result.outcome,
            evidence=result.evidence,
            raw_output=result.raw,
            latency_ms=ms_since(started),
            tokens_in=0,
            tokens_out=0,
        )
    work.model_criteria = [c for c in criteria if c.key not in instruments]
    if work.model_criteria:
        work.request = request_for(
            lane.config, lane.run.rubric_version, work.model_criteria, shown, reference=output.case.reference
        )
        key = cache.cache_key(
            rubric_hash=lane.run.rubric_version.content_hash,
            config_hash=lane.config.content_hash,
            request_hash=work.request.hash,
            sample=item.sample,
        )
        work.common = {"model_id": lane.config.model_id, "request_hash": work.request.hash, "cache_key": key}
    return work


def ask_model(lane: Lane, work: Work) -> bool:
    """In a pool thread (no database here): ask the judge, with retries, and add the verdicts to `work`.

    False if the run was cancelled meanwhile. Anything raised here (the limiter unreachable past its bound,
    a bug) reaches the lane's thread, which stops the run with the reason: it never becomes a verdict.
    """
    assert lane.backend is not None and work.request is not None and lane.sleep is not None
    answer = call_with_retries(
        lane.backend,
        work.request,
        max_retries=lane.config.max_retries,
        limiter=lane.limiter,
        sleep=lane.sleep,
        cancelled=lane.cancelled.is_set,
        rng=lane.rng,
    )
    if answer.cancelled:
        return False
    work.model_calls = answer.attempts
    keys = [c.key for c in work.model_criteria]
    call = {"latency_ms": answer.latency_ms, "attempts": answer.attempts, "raw_output": ""}
    if answer.result is None:
        assert answer.failure is not None
        parsed = parse.all_error(keys, answer.failure.kind, answer.error_reason())
    else:
        result = answer.result
        work.tokens_in, work.tokens_out = result.tokens_in or 0, result.tokens_out or 0
        call.update(
            raw_output=result.raw or result.refusal or "", tokens_in=result.tokens_in, tokens_out=result.tokens_out
        )
        parsed = parse.parse_refusal(keys, result.refusal) if result.refusal else parse.parse_answer(result.raw, keys)
    for criterion, p in zip(work.model_criteria, parsed, strict=True):
        work.add(
            criterion,
            **work.common,
            **call,
            outcome=p.outcome,
            evidence=p.evidence,
            error_kind=p.error_kind,
            error_reason=p.error_reason,
        )
    return True


def write(lane: Lane, finished: list[Work]) -> None:
    """One transaction: every verdict of the finished items (a second write of one is ignored) and their "done".

    If it cannot be written, the items go back to pending and are judged again (MAX_CLAIMS ends that);
    if even that fails the database is gone, and the lane stops (its leases run out).
    """
    if not finished:
        return
    try:
        with transaction.atomic():
            Verdict.objects.bulk_create([v for work in finished for v in work.verdicts], ignore_conflicts=True)
            now = timezone.now()
            for work in finished:
                # The spend adds up when an item was worked twice: both calls were paid for.
                spend = {name: F(name) + getattr(work, name) for name in ("model_calls", "tokens_in", "tokens_out")}
                done = {
                    "state": RunItem.State.DONE,
                    "lease_until": None,
                    "finished_at": now,
                    "cache_hit": work.cache_hit,
                }
                RunItem.objects.filter(pk=work.item.pk).update(**done, **spend)
    except DatabaseError:
        log.exception("judge run %s: could not write %s items; they go back to pending", lane.run.pk, len(finished))
        for work in finished:
            item_leases.release(lane.lane_id, work.item, tried=True)
        return
    for v in (v for work in finished for v in work.verdicts if v.outcome == VerdictOutcome.ERROR):
        where = f"output {v.output_id} {lane.by_id[v.criterion_id].key} sample {v.sample}"
        log.warning("judge run %s: %s is ERROR (%s): %s", lane.run.pk, where, v.error_kind, v.error_reason)
