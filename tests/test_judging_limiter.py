"""The concurrency bound's three implementations: slots are never over-granted, and a dead holder's come back."""

from __future__ import annotations

import subprocess
import sys
import threading
import time

import pytest

from judging.lane import LaneGate
from judging.limiter import FileLimiter, HeldSlots, LocalLimiter, RedisLimiter, redis_client


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


def test_the_local_limiter_never_grants_more_than_its_limit():
    assert peak_holders(LocalLimiter(3)) <= 3


def test_the_file_limiter_never_grants_more_than_its_limit(tmp_path):
    assert peak_holders(FileLimiter(tmp_path, config_id=1, limit=2)) <= 2


def test_the_redis_limiter_never_grants_more_than_its_limit(settings):
    client = redis_client(settings.CELERY_BROKER_URL)
    name = f"{settings.DATABASES['default']['NAME']}:limiter-test"
    client.delete(*[f"icewater:judge-slots:{name}:{k}" for k in ("slots", "cooldown", "wake", "waiting")])
    assert peak_holders(RedisLimiter(client, name=name, limit=2, lease_s=5)) <= 2


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
    limiter = FileLimiter(tmp_path, config_id=7, limit=1)
    got = threading.Event()

    def take() -> None:
        with limiter.slot():
            got.set()

    taker = threading.Thread(target=take, daemon=True)
    taker.start()
    assert not got.wait(0.3)  # the live holder has it
    holder.kill()
    holder.wait()
    assert got.wait(10)


@pytest.mark.parametrize("kind", ["local", "file", "redis"])
def test_a_cool_down_makes_the_next_slot_wait(kind, tmp_path, settings):
    if kind == "local":
        limiter = LocalLimiter(2)
    elif kind == "file":
        limiter = FileLimiter(tmp_path, config_id=3, limit=2)
    else:
        name = f"{settings.DATABASES['default']['NAME']}:cool-test"
        client = redis_client(settings.CELERY_BROKER_URL)
        client.delete(f"icewater:judge-slots:{name}:cooldown")
        limiter = RedisLimiter(client, name=name, limit=2, lease_s=5)
    limiter.cool_down(0.4)
    started = time.monotonic()
    with limiter.slot():
        waited = time.monotonic() - started
    assert waited >= 0.3  # a Retry-After is honored by everyone who shares the bound


def test_preloading_puts_the_limiter_scripts_in_redis_and_ignores_other_brokers(settings):
    import hashlib

    from judging import limiter

    client = redis_client(settings.CELERY_BROKER_URL)
    client.script_flush()
    scripts = (limiter._ACQUIRE, limiter._RELEASE, limiter._LEAVE, limiter._RENEW)
    shas = [hashlib.sha1(s.encode()).hexdigest() for s in scripts]  # noqa: S324 - Redis names scripts by SHA-1
    assert client.script_exists(*shas) == [False] * 4
    limiter.preload("filesystem://")  # the embedded broker has no Redis: nothing to do, no error
    assert client.script_exists(*shas) == [False] * 4
    limiter.preload(settings.CELERY_BROKER_URL)
    assert client.script_exists(*shas) == [True] * 4


# -- a lane's held slots on Redis ----------------------------------------------------------------------


@pytest.fixture
def redis_slots(settings):
    """A fresh RedisLimiter name with a limit of 3; yields (client, slots key, make a limiter)."""
    client = redis_client(settings.CELERY_BROKER_URL)
    name = f"{settings.DATABASES['default']['NAME']}:held-test"
    keys = [f"icewater:judge-slots:{name}:{k}" for k in ("slots", "cooldown", "wake", "waiting")]
    client.delete(*keys)
    yield client, keys[0], lambda: RedisLimiter(client, name=name, limit=3, lease_s=5)
    client.delete(*keys)


@pytest.fixture
def quick_lane(redis_slots, monkeypatch):
    """A lane holding slots of `redis_slots`' limiter whose keeper runs every 50 ms; closed after the test."""
    monkeypatch.setattr(HeldSlots, "KEEP_S", 0.05)
    held = HeldSlots(redis_slots[2]())
    yield held
    held.close()


def test_two_lanes_holding_slots_never_exceed_the_bound_together(redis_slots):
    _, _, make = redis_slots
    shared = make()
    lanes = [LaneGate(shared, 3), LaneGate(shared, 3)]  # each lane would take the whole bound
    lock = threading.Lock()
    state = {"now": 0, "peak": 0}

    def work(gate) -> None:
        for _ in range(6):
            with gate.slot():
                with lock:
                    state["now"] += 1
                    state["peak"] = max(state["peak"], state["now"])
                time.sleep(0.01)
                with lock:
                    state["now"] -= 1

    threads = [threading.Thread(target=work, args=(lanes[i % 2],)) for i in range(10)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=60)
    for gate in lanes:
        gate.close()
    assert state["peak"] == 3  # the bound is reached and never passed


def test_a_lane_reuses_its_slots_instead_of_asking_redis_each_call(redis_slots, monkeypatch):
    client, slots_key, make = redis_slots
    limiter = make()
    asked = []
    acquire = limiter.acquire
    monkeypatch.setattr(limiter, "acquire", lambda: asked.append(1) or acquire())
    held = HeldSlots(limiter)
    try:
        for _ in range(20):
            with held.slot():
                assert client.zcard(slots_key) == 1
        assert len(asked) == 1 and held.held() == 1
    finally:
        held.close()
    assert client.zcard(slots_key) == 0  # closing gives everything back


def test_slots_nobody_uses_go_back_to_redis(redis_slots, quick_lane):
    client, slots_key, _ = redis_slots
    held = quick_lane
    with held.slot():
        pass
    assert client.zcard(slots_key) == 1  # kept for the next call
    deadline = time.monotonic() + 5
    while client.zcard(slots_key) and time.monotonic() < deadline:
        time.sleep(0.02)
    assert client.zcard(slots_key) == 0 and held.held() == 0  # idle for a round: another lane may have it


def test_held_slots_are_renewed_and_a_lost_one_is_dropped(redis_slots, quick_lane):
    client, slots_key, _ = redis_slots
    held = quick_lane
    with held.slot():
        ((token, expiry),) = client.zrange(slots_key, 0, -1, withscores=True)
        time.sleep(0.2)  # a few keeper rounds while the call is in flight
        assert client.zscore(slots_key, token) > expiry  # the lease moved on
        client.zrem(slots_key, token)  # as if it had run out during a stall: someone else's now
        time.sleep(0.2)
        assert held.held() == 0
    assert held.held() == 0  # not put back in the lane's pool after the call either


def test_another_workers_cool_down_reaches_a_lane_that_holds_slots(redis_slots, quick_lane):
    _, _, make = redis_slots
    held = quick_lane
    with held.slot():
        pass  # the lane now holds an idle slot: it would not ask Redis again
    make().cool_down(0.6)  # a 429 seen by a worker elsewhere
    time.sleep(0.15)  # the keeper's round reads it
    started = time.monotonic()
    with held.slot():
        waited = time.monotonic() - started
    assert waited >= 0.3


def test_closing_a_lane_when_redis_is_gone_does_not_fail_the_lane():
    class Unreachable:  # a RedisLimiter whose Redis went away after the slot was taken
        def acquire(self):
            return "token"

        def release(self, token):
            raise ConnectionError("Redis is gone")

        def renew(self, tokens):
            raise ConnectionError("Redis is gone")

        def cool_down(self, seconds):
            pass

    held = HeldSlots(Unreachable())
    with held.slot():
        pass
    held.close()  # logs and returns: the slot's lease runs out on its own
    assert held.held() == 0
