"""Judge throughput against a fake model of realistic latency: the Celery path and the in-process path.

The fake OpenAI-compatible server (tests/fake_llm.py, in its own process, one thread per
connection) answers every call after L = 1 s, about what a real judge model takes. With at
most C = 16 calls in flight no judge can go faster than C / L = 16 calls per second: that
is the bound, and a run of 1,500 items (one call each, per-output mode, about a minute and
a half) must reach at least 0.9 of it on each path. Then unchanged data is judged again on
each path: every verdict must come from the cache, with 0 model calls.

The goals are printed (RESULT: PASS or FAIL), not asserted by a test: a benchmark's figures
depend on the machine and its load. Needs the running PostgreSQL and Redis
(`bash scripts/services.sh start`); it creates a scratch database and drops it at the end:

    .venv/bin/python bench/judge_throughput.py [--items 1500] [--concurrency 16] [--latency 1.0]
                                               [--paths celery,in-process]
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path
from urllib.parse import urlparse

from scratch_database import ROOT, create_database, database_url, drop_database, service_url

sys.path.insert(0, str(ROOT))
# The goal of issue 12: at least this share of the C / L bound.
REQUIRED_RATIO = 0.90


def fake_stats(port: int, reset: bool = False) -> dict:
    """The fake server's counters: calls (since it started), max_in_flight, first_at / last_at (`reset`: a new
    window for these three)."""
    url = f"http://127.0.0.1:{port}/_stats" + ("?reset=1" if reset else "")
    with urllib.request.urlopen(url, timeout=10) as response:
        return json.loads(response.read())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--items", type=int, default=1500)
    parser.add_argument("--concurrency", type=int, default=16)
    parser.add_argument("--latency", type=float, default=1.0, help="seconds the fake model takes per call")
    parser.add_argument("--paths", default="celery,in-process", help="celery, in-process or both, comma-separated")
    args = parser.parse_args()
    args.paths = [p.strip() for p in args.paths.split(",") if p.strip()]
    if not args.paths or set(args.paths) - {"celery", "in-process"}:
        parser.error("--paths takes celery, in-process or both, comma-separated")

    base = database_url()
    scratch, queue = f"bench_judge_{os.getpid()}", f"icewater-bench-{os.getpid()}"
    os.environ.update(
        DATABASE_URL=urlparse(base)._replace(path=f"/{scratch}").geturl(),
        CELERY_BROKER_URL=service_url("CELERY_BROKER_URL", "redis", "Redis"),
        ICEWATER_CELERY_QUEUE=queue,
        ICEWATER_DATA_DIR=tempfile.mkdtemp(prefix="icewater-bench-"),
        ICEWATER_SECRET_KEY=os.environ.get("ICEWATER_SECRET_KEY", "bench-only-secret-key"),
        ICEWATER_DEBUG="0",
        DJANGO_SETTINGS_MODULE="config.settings",
        BENCH_JUDGE_KEY="bench-key-not-secret",
        ICEWATER_JUDGE_KEY_VARS="BENCH_JUDGE_KEY",
    )
    os.environ.pop("ICEWATER_TEST_DB_NAME", None)
    admin = create_database(base, scratch)
    fake = subprocess.Popen(
        [sys.executable, "-m", "tests.fake_llm", "--latency", str(args.latency)],
        cwd=ROOT,
        stdout=subprocess.PIPE,
        text=True,
    )
    worker = None
    try:
        port = int(fake.stdout.readline())
        import django

        django.setup()
        if "celery" in args.paths:
            worker = start_worker()
        ok = run_bench(args, port)
    finally:
        if worker is not None:
            stop(worker)
        fake.terminate()
        fake.wait(timeout=10)
        forget_queue(os.environ["CELERY_BROKER_URL"], queue)
        from django.db import connections

        connections.close_all()
        drop_database(admin, scratch)
    print("RESULT:", "PASS" if ok else "FAIL")


def start_worker() -> subprocess.Popen:
    """A real Celery worker (two pool processes: one per lane of a run), ready to take tasks."""
    from config.celery import app
    from tests.judging_helpers import celery_worker_argv

    name = f"bench-{os.getpid()}"
    log = Path(os.environ["ICEWATER_DATA_DIR"]) / "worker.log"
    worker = subprocess.Popen(
        celery_worker_argv(name, concurrency=2, loglevel="WARNING"),
        cwd=ROOT,
        env=os.environ.copy(),
        stdout=log.open("wb"),
        stderr=subprocess.STDOUT,
        start_new_session=True,
    )
    deadline = time.monotonic() + 120
    while not app.control.ping(destination=[f"{name}@{os.uname().nodename}"], timeout=1.0):
        if worker.poll() is not None or time.monotonic() > deadline:
            stop(worker)
            raise SystemExit(f"the worker did not start:\n{log.read_text()[-2000:]}")
    return worker


def stop(worker: subprocess.Popen) -> None:
    """Warm shutdown of the worker and its pool; killed if it does not go within 30 s."""
    if worker.poll() is None:
        os.killpg(worker.pid, signal.SIGTERM)
        try:
            worker.wait(timeout=30)
        except subprocess.TimeoutExpired:
            os.killpg(worker.pid, signal.SIGKILL)
            worker.wait(timeout=30)


def forget_queue(url: str, queue: str) -> None:
    """Remove what the bench's Celery queue left in the shared Redis (the queue and kombu's bindings)."""
    import redis

    client = redis.Redis.from_url(url)
    keys = list(client.scan_iter(match=f"*{queue}*"))
    if keys:
        client.delete(*keys)


def run_bench(args, port: int) -> bool:
    from django.core.management import call_command

    from evals.models import Case, EvalSet, Output
    from judging import runner
    from judging.models import JudgeConfig, JudgeRun
    from judging.warmup import warm_up
    from tests.factories import default_workspace, make_rubric_version

    call_command("migrate", verbosity=0)
    workspace = default_workspace()  # the rubric's too (make_rubric_version's default)
    eval_set = EvalSet.objects.create(workspace=workspace, name="bench")
    cases = Case.objects.bulk_create(
        Case(eval_set=eval_set, case_id=f"case-{i:05d}", input=f"Refund order {i}?", reference="Refund $40.00.")
        for i in range(args.items)
    )
    Output.objects.bulk_create(
        Output(
            case=c,
            response=f"I refunded $40.00 for order {i}; it arrives in 5 business days.",
            tool_calls=[{"name": "lookup_order", "args": {"order_id": i}, "response": {"refundable": 40.0}}],
        )
        for i, c in enumerate(cases)
    )
    rubric = make_rubric_version(name="bench", version="1")
    bound = args.concurrency / args.latency
    print(
        f"{args.items} items, C = {args.concurrency} calls in flight, fake model latency L = {args.latency:g} s: "
        f"bound C/L = {bound:g} items/s; goal >= {REQUIRED_RATIO} of it, and 0 model calls on an unchanged re-run"
    )
    warm_up()  # as `run_judge --in-process` does, and a Celery worker before it forks its pool
    ok = True
    for path in args.paths:
        mode = JudgeRun.Mode.CELERY if path == "celery" else JudgeRun.Mode.IN_PROCESS
        # A model id per path: another judge config hash, so one path cannot hit the other's cache.
        judge = JudgeConfig.objects.create(
            workspace=workspace,
            name=f"bench-{path}",
            backend="openai",
            model_id=f"bench-model-{path}",
            base_url=f"http://127.0.0.1:{port}/v1",
            api_key_env="BENCH_JUDGE_KEY",
            max_concurrency=args.concurrency,
            timeout_s=30,
            max_retries=2,
        )
        for attempt in ("first run", "unchanged re-run"):
            calls_before = fake_stats(port, reset=True)["calls"]
            run = runner.create_run(runner.Scope(eval_set, rubric, judge), mode=mode)
            started = time.monotonic()
            if path == "celery":
                runner.enqueue_lanes(run.pk)
                while run.is_active:
                    time.sleep(0.05)
                    run.refresh_from_db(fields=["status"])
            else:
                runner.run_in_process(run)
            ended = time.monotonic()
            elapsed = ended - started
            run.refresh_from_db()
            stats = fake_stats(port)
            calls = stats["calls"] - calls_before
            verdicts, hits = run.verdicts.count(), run.verdicts.filter(cache_hit=True).count()
            rate = run.total_items / elapsed
            line = (
                f"{path} {attempt}: {run.total_items} items ({verdicts} verdicts, {hits} from the cache) in "
                f"{elapsed:.1f} s = {rate:.2f} items/s; {calls} model calls, at most "
                f"{stats['max_in_flight']} in flight; status {run.status}"
            )
            if attempt == "first run":
                passed = (
                    run.status == JudgeRun.Status.DONE
                    and verdicts == run.expected_verdicts
                    and rate >= REQUIRED_RATIO * bound
                )
                line += f"; {rate / bound:.3f} of the bound -> {'ok' if passed else 'TOO SLOW'}"
                if stats["first_at"] and stats["last_at"]:
                    # The fake stamps with the same system-wide monotonic clock: where the time went around calls.
                    line += (
                        f" (first call {stats['first_at'] - started:.2f} s after the start, "
                        f"run done {ended - stats['last_at']:.2f} s after the last answer)"
                    )
            else:
                passed = run.status == JudgeRun.Status.DONE and calls == 0 and hits == run.expected_verdicts
                line += f" -> {'ok' if passed else 'FAIL: the cache missed'}"
            print(line, flush=True)
            ok = ok and passed
    return ok


if __name__ == "__main__":
    main()
