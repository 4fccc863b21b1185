"""The concurrency bound of a judge config: at most `max_concurrency` model calls in flight, across all workers.

Design. A run is worked by a few lanes (Celery tasks), each a thread pool as wide as
the bound; every thread takes a slot here before each model call attempt and gives
it back right after, also before sleeping on a backoff. The slots are shared by every
lane of every run of the config:

- RedisLimiter (the Celery path on Redis): a sorted set of slot holders per judge
  config, scored by lease expiry. Taking a slot is one Lua script (drop expired
  holders, add ourselves if there is room), so a worker killed while holding a slot
  loses it when the lease runs out instead of shrinking the bound for ever. Waiters
  block on a wake-up list that every release pushes to (no busy polling), with a
  short timeout as the fallback for leases that expire. A 429 with Retry-After also
  sets a cool-down key that makes every worker of the config wait it out.
- FileLimiter (the embedded file-system broker: all workers on one machine): one
  lock file per slot; the OS drops a dead process's locks.
- LocalLimiter (`--in-process`): a semaphore in this process.
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
from contextlib import contextmanager
from pathlib import Path
from typing import Protocol

# A slot outlives the longest attempt (the config's timeout, which the SDK enforces) by this
# much, so a live holder is never dropped; a dead worker's slot comes back this long after its timeout.
SLOT_LEASE_MARGIN_S = 5.0
# Fallback poll when no release wakes a waiter (a dead holder's lease has to expire).
WAIT_POLL_S = 0.25

# Release in one round trip; wake a waiter only if someone waits (most releases have nobody waiting).
_RELEASE = """
redis.call('ZREM', KEYS[1], ARGV[1])
local waiting = tonumber(redis.call('GET', KEYS[3]) or '0')
if waiting > 0 then
  redis.call('LPUSH', KEYS[2], 1)
  redis.call('LTRIM', KEYS[2], 0, tonumber(ARGV[2]) - 1)
  redis.call('PEXPIRE', KEYS[2], tonumber(ARGV[3]))
end
return waiting
"""
# A waiter leaves: the count goes down, and the key goes away at zero (it never lingers without a TTL).
_LEAVE = """
local left = redis.call('DECR', KEYS[1])
if left <= 0 then redis.call('DEL', KEYS[1]) else redis.call('PEXPIRE', KEYS[1], tonumber(ARGV[1])) end
return left
"""
# Renew held slots: a new expiry for every token still in the set; the ones that are not (their lease ran
# out) come back, with the cool-down left, so that a lane holding slots also hears of another's 429.
_RENEW = """
local t = redis.call('TIME')
local expiry = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000) + tonumber(ARGV[1])
local lost = {}
for i = 2, #ARGV do
  if redis.call('ZSCORE', KEYS[1], ARGV[i]) then
    redis.call('ZADD', KEYS[1], expiry, ARGV[i])
  else
    table.insert(lost, ARGV[i])
  end
end
if #ARGV > 1 then redis.call('PEXPIRE', KEYS[1], tonumber(ARGV[1]) * 2) end
return {lost, redis.call('PTTL', KEYS[2])}
"""
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


class Limiter(Protocol):
    def slot(self) -> Iterator[None]: ...

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
        self._slots, self._cool, self._wake = f"{prefix}:slots", f"{prefix}:cooldown", f"{prefix}:wake"
        self._waiting = f"{prefix}:waiting"
        self._acquire = client.register_script(_ACQUIRE)
        self._release = client.register_script(_RELEASE)
        self._leave = client.register_script(_LEAVE)
        self._renew = client.register_script(_RENEW)

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
            got = int(self._acquire(keys=[self._slots, self._cool], args=[self._limit, self._lease_ms, token]))
            if got == 1:
                return token
            if got < 0:  # cooling down after a 429: everyone waits the Retry-After out
                time.sleep(-got / 1000)
                continue
            self._wait()

    def release(self, token: str) -> None:
        self._release(keys=[self._slots, self._wake, self._waiting], args=[token, self._limit, self._lease_ms])

    def renew(self, tokens: list[str]) -> tuple[set[str], int]:
        """Extend the leases of `tokens` (one round trip); returns the tokens no longer held and the cool-down
        left in milliseconds (0 if none)."""
        lost, cool = self._renew(keys=[self._slots, self._cool], args=[self._lease_ms, *tokens])
        return {t.decode() if isinstance(t, bytes) else t for t in lost}, max(0, int(cool))

    def _wait(self) -> None:
        pipe = self._redis.pipeline()
        pipe.incr(self._waiting)
        pipe.pexpire(self._waiting, self._lease_ms)
        pipe.execute()
        try:
            self._redis.blpop([self._wake], timeout=WAIT_POLL_S)
        finally:
            self._leave(keys=[self._waiting], args=[self._lease_ms])

    def cool_down(self, seconds: float) -> None:
        millis = int(seconds * 1000)
        if millis > 0:
            # Keep the later of an existing and the new cool-down.
            current = self._redis.pttl(self._cool)
            if current is None or current < millis:
                self._redis.set(self._cool, 1, px=millis)


class HeldSlots:
    """A lane's share of a RedisLimiter's slots, taken from Redis once and reused by the lane's threads.

    Taking and giving back a Redis slot around every model call is two round trips in the calling thread;
    a one-lane Celery run measured 0.83-0.85 of the bound with them against 0.92-0.93 for the same lane with
    a local semaphore. Here a thread takes an idle slot the lane already holds when there is one, and gives
    it back to the lane, not to Redis. The bound still holds: every slot the lane uses is a Redis slot,
    and a lane never holds more than the threads it lets in at once (LaneGate's semaphore, its share).
    A keeper thread, every KEEP_S: renews the leases of the held slots (so a dead worker's come back when
    they run out, as before), reads the config's cool-down (another worker's 429 reaches this lane within
    KEEP_S), and gives back to Redis the slots nobody used since its last round (another lane, or another
    run of the config, gets them within about two rounds).
    """

    KEEP_S = 0.5

    def __init__(self, limiter: RedisLimiter):
        self._limiter = limiter
        self._lock = threading.Lock()
        self._held: set[str] = set()
        self._idle: list[str] = []
        self._used: set[str] = set()  # taken since the keeper's last round
        self._cool_until = 0.0
        self._stop = threading.Event()
        self._keeper = threading.Thread(target=self._keep, name="judge-slot-keeper", daemon=True)
        self._keeper.start()

    @contextmanager
    def slot(self) -> Iterator[None]:
        _sleep_until(lambda: self._cool_until)
        with self._lock:
            token = self._idle.pop() if self._idle else None
        if token is None:
            token = self._limiter.acquire()
            with self._lock:
                self._held.add(token)
        with self._lock:
            self._used.add(token)
        try:
            yield
        finally:
            with self._lock:
                if token in self._held:  # not lost meanwhile (see _keep_once)
                    self._idle.append(token)

    def cool_down(self, seconds: float) -> None:
        self._cool_until = max(self._cool_until, time.monotonic() + seconds)
        self._limiter.cool_down(seconds)

    def held(self) -> int:
        with self._lock:
            return len(self._held)

    def close(self) -> None:
        """Stop the keeper and give every slot back (call once the lane's threads are done)."""
        self._stop.set()
        self._keeper.join(timeout=10)
        with self._lock:
            tokens, self._held, self._idle = list(self._held), set(), []
        try:
            for token in tokens:
                self._limiter.release(token)
        except Exception:  # Redis is gone: the leases run out on their own  # noqa: BLE001
            logging.getLogger(__name__).warning("judge slots: could not give the slots back", exc_info=True)

    def _keep(self) -> None:
        while not self._stop.wait(self.KEEP_S):
            try:
                self._keep_once()
            except Exception:  # Redis hiccup: the leases outlive many rounds; try again at the next  # noqa: BLE001
                logging.getLogger(__name__).warning("judge slots: renewing the leases failed", exc_info=True)

    def _keep_once(self) -> None:
        with self._lock:
            unused = [t for t in self._idle if t not in self._used]
            for token in unused:
                self._idle.remove(token)
                self._held.discard(token)
            self._used.clear()
            tokens = list(self._held)
        for token in unused:
            self._limiter.release(token)
        lost, cool_ms = self._limiter.renew(tokens)
        if lost:  # their leases ran out (a stalled process): they may be someone else's now
            with self._lock:
                self._held -= lost
                self._idle = [t for t in self._idle if t not in lost]
        if cool_ms:
            self._cool_until = max(self._cool_until, time.monotonic() + cool_ms / 1000)


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


def preload(broker_url: str) -> None:
    """Connect to the limiter's Redis and load its scripts, so that a lane's first slot costs one round trip."""
    if broker_url.startswith(("redis://", "rediss://")):
        client = redis_client(broker_url)
        for script in (_ACQUIRE, _RELEASE, _LEAVE, _RENEW):
            client.script_load(script)


def redis_client(url: str):
    """One connection pool per process and URL (lane threads share it)."""
    import redis

    with _clients_lock:
        key = f"{os.getpid()}:{url}"
        if key not in _clients:
            _clients[key] = redis.Redis.from_url(url)
        return _clients[key]
