"""Retrying one model call: exponential backoff with jitter, honoring Retry-After, inside the concurrency bound.

Every attempt takes a slot from the limiter and gives it back before any backoff, so a
thread waiting out a 429 never holds capacity. 429, 5xx (and 408/409), timeouts and
connection failures are retried; anything else (a rejected key, a bad request) is not.
A 429's Retry-After also cools the whole judge config down (limiter.cool_down).
"""

from __future__ import annotations

import logging
import random
import time
from collections.abc import Callable
from dataclasses import dataclass

from .backends import CallFailed, CallResult, ModelBackend
from .limiter import Limiter
from .prompt import JudgeRequest

log = logging.getLogger(__name__)

# Attempt n waits between half and all of min(CAP, BASE * 2**n) ("equal jitter"): retries from
# many threads spread out but still grow; 0.5 s doubling reaches the 30 s cap at the 7th retry.
BACKOFF_BASE_S = 0.5
BACKOFF_CAP_S = 30.0
# A Retry-After above this is not waited out inside a run: the verdict becomes ERROR and says so.
RETRY_AFTER_CAP_S = 120.0


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
                return Answer(result, None, attempts, ms_since(started))
            latency_ms = ms_since(started)
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


def ms_since(started: float) -> int:
    return round((time.perf_counter() - started) * 1000)
