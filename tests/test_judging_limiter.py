"""The concurrency bound's three implementations: slots are never over-granted, and a dead holder's come back."""

from __future__ import annotations

import subprocess
import sys
import threading
import time

import pytest

from judging.limiter import FileLimiter, LocalLimiter, RedisLimiter, redis_client


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
    shas = [hashlib.sha1(s.encode()).hexdigest() for s in (limiter._ACQUIRE, limiter._RELEASE, limiter._LEAVE)]  # noqa: S324 - Redis names scripts by SHA-1
    assert client.script_exists(*shas) == [False, False, False]
    limiter.preload("filesystem://")  # the embedded broker has no Redis: nothing to do, no error
    assert client.script_exists(*shas) == [False, False, False]
    limiter.preload(settings.CELERY_BROKER_URL)
    assert client.script_exists(*shas) == [True, True, True]
