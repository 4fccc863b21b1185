"""The concurrency bound's three implementations: slots are never over-granted, a dead holder's come back,
and a 429's cool-down makes every holder of the bound wait it out.

No assertion here depends on how fast the machine is: waits for the cool-down run on a fake clock, and a
slot that must not be granted is checked as "not granted while it is held" (true however slow the test).
"""

from __future__ import annotations

import subprocess
import sys
import threading
import time

import pytest

from judging import limiter as limiter_module
from judging.limiter import FileLimiter, LocalLimiter, RedisLimiter, redis_client

# A slot that is free must be granted well within this; a generous ceiling, never reached when things work.
GRANTED_WITHIN_S = 30


def peak_holders(limiter, threads: int = 8, rounds: int = 5, hold_s: float = 0.02) -> int:
    """Run `threads` threads that each take a slot `rounds` times; return the most slots held at once."""
    lock = threading.Lock()
    state = {"now": 0, "peak": 0}

    def work() -> None:
        for _ in range(rounds):
            with limiter.slot():
                with lock:
                    state["now"] += 1
                    state["peak"] = max(state["peak"], state["now"])
                time.sleep(hold_s)
                with lock:
                    state["now"] -= 1

    pool = [threading.Thread(target=work) for _ in range(threads)]
    for t in pool:
        t.start()
    for t in pool:
        t.join(timeout=60)
    return state["peak"]


@pytest.fixture
def redis_name(settings):
    """A RedisLimiter name of its own for this test (the database name keeps parallel test runs apart)."""
    client = redis_client(settings.CELERY_BROKER_URL)
    name = f"{settings.DATABASES['default']['NAME']}:limiter-test"
    keys = [f"icewater:judge-slots:{name}:{k}" for k in ("slots", "cooldown")]
    client.delete(*keys)
    yield name
    client.delete(*keys)


def make_redis(name: str, limit: int = 2, lease_s: float = 5) -> RedisLimiter:
    from django.conf import settings

    return RedisLimiter(redis_client(settings.CELERY_BROKER_URL), name=name, limit=limit, lease_s=lease_s)


def taken_in_background(limiter) -> threading.Event:
    """Start a thread that takes a slot of `limiter` (and gives it back); the event is set once it has it."""
    got = threading.Event()

    def take() -> None:
        with limiter.slot():
            got.set()

    threading.Thread(target=take, daemon=True).start()
    return got


def test_the_local_limiter_never_grants_more_than_its_limit():
    assert peak_holders(LocalLimiter(3)) <= 3


def test_the_file_limiter_never_grants_more_than_its_limit(tmp_path):
    assert peak_holders(FileLimiter(tmp_path, config_id=1, limit=2)) <= 2


def test_the_redis_limiter_never_grants_more_than_its_limit(redis_name):
    assert peak_holders(make_redis(redis_name, limit=2)) <= 2


@pytest.mark.subprocess
def test_a_file_slot_held_by_a_process_that_dies_is_free_again(tmp_path):
    # A process takes the only slot and is killed without letting go; the OS drops its lock.
    holder = subprocess.Popen(
        [
            sys.executable,
            "-c",
            (
                "import fcntl, os, sys, time\n"
                f"fd = os.open({str(tmp_path / 'judge-7-slot-0.lock')!r}, os.O_CREAT | os.O_RDWR)\n"
                "fcntl.flock(fd, fcntl.LOCK_EX)\nprint('held', flush=True)\ntime.sleep(60)\n"
            ),
        ],
        stdout=subprocess.PIPE,
        text=True,
    )
    assert holder.stdout.readline().strip() == "held"
    got = taken_in_background(FileLimiter(tmp_path, config_id=7, limit=1))
    assert not got.wait(0.3)  # the live holder has it (however long this waits: it is held all along)
    holder.kill()
    holder.wait()
    assert got.wait(GRANTED_WITHIN_S)


def test_a_redis_slot_held_by_a_dead_worker_comes_back_when_its_lease_ends(settings, redis_name):
    limiter = make_redis(redis_name, limit=1, lease_s=60)
    token = limiter.acquire()  # and the worker dies here: it never gives the slot back
    got = taken_in_background(make_redis(redis_name, limit=1))
    assert not got.wait(0.3)  # the lease has a minute to run: the slot is still the dead worker's
    # Its lease runs out (moved to the past here instead of waiting a minute): the waiter gets the slot.
    slots = f"icewater:judge-slots:{redis_name}:slots"
    redis_client(settings.CELERY_BROKER_URL).zadd(slots, {token: 0})
    assert got.wait(GRANTED_WITHIN_S)


class FakeTime:
    """Stands in for the `time` module inside judging.limiter: sleeping moves a clock on instead of waiting."""

    def __init__(self, after_sleep=lambda: None):
        self.now = 1_000_000.0
        self.slept: list[float] = []
        self.after_sleep = after_sleep

    def monotonic(self) -> float:
        return self.now

    def time(self) -> float:
        return self.now

    def sleep(self, seconds: float) -> None:
        self.slept.append(seconds)
        self.now += seconds
        self.after_sleep()


@pytest.mark.parametrize("kind", ["local", "file", "redis"])
def test_a_cool_down_makes_the_next_slot_wait_it_out(kind, tmp_path, settings, redis_name, monkeypatch):
    cooldown_key = f"icewater:judge-slots:{redis_name}:cooldown"
    # Redis keeps its own time: the cool-down key is deleted at the first sleep, as if it had run out.
    clock = FakeTime(lambda: redis_client(settings.CELERY_BROKER_URL).delete(cooldown_key))
    monkeypatch.setattr(limiter_module, "time", clock)
    if kind == "local":
        seen_by = cooled_by = LocalLimiter(2)
    elif kind == "file":  # two workers on one machine: one saw the 429, the other must wait too
        seen_by, cooled_by = FileLimiter(tmp_path, config_id=3, limit=2), FileLimiter(tmp_path, config_id=3, limit=2)
    else:
        seen_by, cooled_by = make_redis(redis_name), make_redis(redis_name)
    with cooled_by.slot():
        pass
    assert clock.slept == []  # negative control: no cool-down, no wait
    seen_by.cool_down(30)
    with cooled_by.slot():
        pass
    # The whole Retry-After is waited out (Redis counts it down in real time: a second's slack).
    assert 29 <= sum(clock.slept) <= 30


def test_a_shorter_cool_down_does_not_cut_a_longer_one_short(settings, redis_name):
    limiter = make_redis(redis_name)
    limiter.cool_down(30)
    limiter.cool_down(5)  # another worker's 429 with a shorter Retry-After
    assert redis_client(settings.CELERY_BROKER_URL).pttl(f"icewater:judge-slots:{redis_name}:cooldown") > 5000
