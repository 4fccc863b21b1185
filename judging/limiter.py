"""The concurrency bound of a judge config: at most `max_concurrency` model calls in flight, across all workers.

Design. A run is worked by a few lanes (judging/lane.py), each a thread pool with its
share of the bound; every thread takes a slot here before each model call attempt and
gives it back right after, also before sleeping on a backoff. The slots are shared by
every lane of every run of the config:

- RedisLimiter (the Celery path on Redis): a sorted set of slot holders per judge
  config, scored by lease expiry. Taking a slot is one Lua script (drop expired
  holders, add ourselves if there is room), so a worker killed while holding a slot
  loses it when the lease runs out instead of shrinking the bound for ever. A caller
  finding no room asks again every WAIT_POLL_S (rare: the lanes of a run split the
  bound between them). A 429 with Retry-After also sets a cool-down key that makes
  every worker of the config wait it out.
- FileLimiter (the embedded file-system broker: all workers on one machine): one
  lock file per slot; the OS drops a dead process's locks.
- LocalLimiter (`--in-process`): a semaphore in this process.

An outage of Redis (a restart, a failover, a dropped connection) is not the judge's answer: a caller
waits for it to come back, asking again with a growing, jittered pause, for up to OUTAGE_WAIT_S;
past that it raises LimiterUnavailable, and the lane stops the run with that reason (judging/lane.py).
Giving a slot back or setting a cool-down never waits: a slot not given back is freed when its lease
runs out, and a lost cool-down is set again by the next 429.
"""

from __future__ import annotations

import fcntl
import logging
import os
import random
import threading
import time
import uuid
from collections.abc import Iterator
from contextlib import AbstractContextManager, contextmanager
from pathlib import Path
from typing import Protocol

from redis.exceptions import ConnectionError as RedisConnectionError
from redis.exceptions import TimeoutError as RedisTimeoutError

log = logging.getLogger(__name__)

# A slot outlives the longest attempt (the config's timeout, which the SDK enforces) by this
# much, so a live holder is never dropped; a dead worker's slot comes back this long after its timeout.
SLOT_LEASE_MARGIN_S = 5.0
# How often a caller waiting for a slot asks again: a small fraction of a model call (seconds).
WAIT_POLL_S = 0.25
# How long a caller waits for an unreachable Redis to come back before the lane gives up and fails the run
# (seconds): a restart or a failover takes a few seconds; an outage longer than this needs an operator.
OUTAGE_WAIT_S = 120.0
# The pause between tries while Redis is unreachable: from the first, doubling up to the cap, with jitter.
OUTAGE_RETRY_FIRST_S = 0.1
OUTAGE_RETRY_CAP_S = 5.0
# What a Redis client raises when the server cannot be reached (refused, reset, timed out, still loading).
REDIS_DOWN = (RedisConnectionError, RedisTimeoutError)

# Take a slot if there is room (after dropping holders whose lease ran out); the cool-down left if any.
_ACQUIRE = """
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local cool = redis.call('PTTL', KEYS[2])
if cool > 0 then return -cool end
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now)
if redis.call('ZCARD', KEYS[1]) < tonumber(ARGV[1]) then
  redis.call('ZADD', KEYS[1], now + tonumber(ARGV[2]), ARGV[3])
  redis.call('PEXPIRE', KEYS[1], tonumber(ARGV[2]) * 2)
  return 1
end
return 0
"""


class LimiterUnavailable(Exception):
    """The limiter's store stayed unreachable for longer than OUTAGE_WAIT_S: no call may be made."""


class Limiter(Protocol):
    def slot(self) -> AbstractContextManager[None]: ...

    def cool_down(self, seconds: float) -> None: ...


class LocalLimiter:
    def __init__(self, limit: int):
        self._semaphore = threading.BoundedSemaphore(max(1, limit))
        self._cool_until = 0.0

    @contextmanager
    def slot(self) -> Iterator[None]:
        _sleep_until(lambda: self._cool_until)
        with self._semaphore:
            yield

    def cool_down(self, seconds: float) -> None:
        self._cool_until = max(self._cool_until, time.monotonic() + seconds)


class RedisLimiter:
    def __init__(self, client, *, name: str, limit: int, lease_s: float):
        """`name` identifies the judge config in this installation (several may share one Redis)."""
        self._redis = client
        self._limit = max(1, limit)
        self._lease_ms = int((lease_s + SLOT_LEASE_MARGIN_S) * 1000)
        prefix = f"icewater:judge-slots:{name}"
        self._slots, self._cool = f"{prefix}:slots", f"{prefix}:cooldown"
        self._acquire = client.register_script(_ACQUIRE)

    @contextmanager
    def slot(self) -> Iterator[None]:
        token = self.acquire()
        try:
            yield
        finally:
            self.release(token)

    def acquire(self) -> str:
        """Take a slot (waiting for one, and out any cool-down); returns the holder's token."""
        token = uuid.uuid4().hex
        while True:
            got = int(
                _through_outage(
                    lambda: self._acquire(keys=[self._slots, self._cool], args=[self._limit, self._lease_ms, token])
                )
            )
            if got == 1:
                return token
            # Cooling down after a 429 (everyone waits the Retry-After out), or every slot is taken.
            time.sleep(-got / 1000 if got < 0 else WAIT_POLL_S)

    def release(self, token: str) -> None:
        try:
            self._redis.zrem(self._slots, token)
        except REDIS_DOWN as exc:
            # Never wait here: the call is over and its answer must be kept. The slot's lease frees it.
            log.warning("judge limiter: could not give a slot back (%s); its lease frees it", exc)

    def cool_down(self, seconds: float) -> None:
        millis = int(seconds * 1000)
        if millis > 0:
            try:
                # Keep the later of an existing and the new cool-down.
                current = self._redis.pttl(self._cool)
                if current is None or current < millis:
                    self._redis.set(self._cool, 1, px=millis)
            except REDIS_DOWN as exc:
                log.warning("judge limiter: could not set a %.1f s cool-down (%s)", seconds, exc)


def _through_outage(ask, *, rng: random.Random | None = None):
    """`ask()`'s answer, asking again while Redis is unreachable, for up to OUTAGE_WAIT_S (LimiterUnavailable
    after that). The pauses grow from OUTAGE_RETRY_FIRST_S to OUTAGE_RETRY_CAP_S, each between half and all
    of its ceiling, so the lanes of every worker do not all knock at the same moment when it is back."""
    rng = rng or random.Random()
    first_failure: float | None = None
    ceiling = OUTAGE_RETRY_FIRST_S
    while True:
        try:
            return ask()
        except REDIS_DOWN as exc:
            now = time.monotonic()
            if first_failure is None:
                first_failure = now
                log.warning("judge limiter: Redis is unreachable (%s); waiting up to %.0f s", exc, OUTAGE_WAIT_S)
            left = OUTAGE_WAIT_S - (now - first_failure)
            if left <= 0:
                raise LimiterUnavailable(
                    f"the judge's concurrency limiter (Redis) was unreachable for {OUTAGE_WAIT_S:g} s "
                    f"({type(exc).__name__}: {exc})"
                ) from exc
            time.sleep(min(left, ceiling / 2 + rng.uniform(0, ceiling / 2)))
            ceiling = min(OUTAGE_RETRY_CAP_S, ceiling * 2)


class FileLimiter:
    def __init__(self, directory: Path, *, config_id: int, limit: int):
        directory.mkdir(parents=True, exist_ok=True)
        self._paths = [directory / f"judge-{config_id}-slot-{i}.lock" for i in range(max(1, limit))]
        self._cool_path = directory / f"judge-{config_id}-cooldown"

    @contextmanager
    def slot(self) -> Iterator[None]:
        _sleep_until(self._cool_until)
        while True:
            for path in random.sample(self._paths, len(self._paths)):
                fd = os.open(path, os.O_CREAT | os.O_RDWR, 0o600)
                try:
                    fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                except BlockingIOError:
                    os.close(fd)
                    continue
                try:
                    yield
                finally:
                    fcntl.flock(fd, fcntl.LOCK_UN)
                    os.close(fd)
                return
            time.sleep(0.02)

    def _cool_until(self) -> float:
        try:
            return float(self._cool_path.read_text()) - time.time() + time.monotonic()
        except (OSError, ValueError):
            return 0.0

    def cool_down(self, seconds: float) -> None:
        self._cool_path.write_text(str(time.time() + seconds))


def _sleep_until(deadline) -> None:
    while (remaining := deadline() - time.monotonic()) > 0:
        time.sleep(min(remaining, 1.0))


def limiter_for(config, *, in_process: bool) -> Limiter:
    """The limiter shared by every lane that may run calls for `config` in this deployment."""
    from django.conf import settings

    if in_process:
        return LocalLimiter(config.max_concurrency)
    broker = settings.CELERY_BROKER_URL
    if broker.startswith(("redis://", "rediss://")):
        # The database name tells installations (and parallel test runs) sharing one Redis apart.
        name = f"{settings.DATABASES['default']['NAME']}:{config.pk}"
        return RedisLimiter(redis_client(broker), name=name, limit=config.max_concurrency, lease_s=config.timeout_s)
    return FileLimiter(Path(settings.DATA_DIR) / "judge-slots", config_id=config.pk, limit=config.max_concurrency)


_clients: dict[str, object] = {}
_clients_lock = threading.Lock()


def redis_client(url: str):
    """One connection pool per process and URL (lane threads share it)."""
    import redis

    with _clients_lock:
        key = f"{os.getpid()}:{url}"
        if key not in _clients:
            _clients[key] = redis.Redis.from_url(url)
        return _clients[key]
