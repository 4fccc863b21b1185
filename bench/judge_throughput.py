"""Judge throughput against a fake model with a fixed latency: Celery path and in-process path.

The fake OpenAI-compatible server (tests/fake_llm.py, in its own process, one thread per
connection, so unlimited parallelism) answers every call after L = 100 ms. With at most
C = 16 calls in flight, no judge can go faster than C / L = 160 calls per second: that is
the bound, and a run of 2,000 items (one call each, per-output mode) must reach at least 90%
of it. The script also measures, in the same run, the real latency of one call through the
SDK (L plus the client's own overhead) and prints the ratio to the bound that gives as well.
Finally it re-runs unchanged data and prints the model calls made: the cache must make it 0.
Each path starts warm, as it does in use: the Celery worker warms up when it starts, and the
in-process run is preceded by the warm-up `run_judge --in-process` does (judging/warmup.py).

Needs the running PostgreSQL and Redis (`bash scripts/services.sh start`); it creates a scratch
database and drops it at the end. Usage:

    .venv/bin/python bench/judge_throughput.py [--items 2000] [--concurrency 16] [--latency 0.1]
                                               [--paths celery,in-process]
"""

from __future__ import annotations

import argparse
import json
import os
import shlex
import signal
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path
from urllib.parse import urlparse, urlunparse

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
# The target of the issue: at least this share of the C / L bound.
REQUIRED_RATIO = 0.90


def services_env() -> dict[str, str]:
    """DATABASE_URL and CELERY_BROKER_URL from the environment, else from scripts/services.sh env."""
    if os.environ.get("DATABASE_URL") and os.environ.get("CELERY_BROKER_URL"):
        return {k: os.environ[k] for k in ("DATABASE_URL", "CELERY_BROKER_URL")}
    out = subprocess.run(["bash", "scripts/services.sh", "env"], cwd=ROOT, capture_output=True, text=True, check=True)
    env = {}
    for line in out.stdout.splitlines():
        key, _, value = line.removeprefix("export ").partition("=")
        env[key] = shlex.split(value)[0]
    return env


def with_database(url: str, name: str) -> str:
    parts = urlparse(url)
    return urlunparse(parts._replace(path=f"/{name}"))


def admin(url: str, sql: str) -> None:
    import psycopg

    with psycopg.connect(url.replace("postgres://", "postgresql://", 1), autocommit=True) as conn:
        conn.execute(sql)


def fake_stats(port: int, reset: bool = False) -> dict:
    url = f"http://127.0.0.1:{port}/_stats" + ("?reset=1" if reset else "")
    with urllib.request.urlopen(url, timeout=10) as response:
        return json.loads(response.read())


def fake_calls(port: int, new_window: bool = False) -> int:
    """Model calls the fake server has answered so far; `new_window` restarts its peak-concurrency count."""
    return fake_stats(port, reset=new_window)["calls"]


def forget_queue(broker_url: str, queue: str) -> None:
    """Remove what the bench's Celery queue left in the shared Redis (the queue and kombu's bindings)."""
    import redis

    client = redis.Redis.from_url(broker_url)
    keys = list(client.scan_iter(match=f"*{queue}*"))
    if keys:
        client.delete(*keys)


def tree_cpu_seconds(root: int) -> float:
    """User + system CPU of a process and its live descendants (the Celery worker and its pool), from /proc."""
    tick = os.sysconf("SC_CLK_TCK")
    stats = {}
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                fields = Path(f"/proc/{entry}/stat").read_text().rsplit(")", 1)[1].split()
            except OSError:
                continue
            stats[int(entry)] = (int(fields[1]), (int(fields[11]) + int(fields[12])) / tick)
    tree, total = {root}, 0.0
    for _ in range(4):  # a few levels of descendants are enough for worker -> pool process -> nothing
        tree |= {pid for pid, (ppid, _) in stats.items() if ppid in tree}
    for pid in tree:
        total += stats.get(pid, (0, 0.0))[1]
    return total


def wait_for_line(path: Path, needle: str, process: subprocess.Popen, timeout: float) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise SystemExit(f"worker exited early:\n{path.read_text()[-2000:]}")
        if needle in path.read_text(errors="replace"):
            return
        time.sleep(0.2)
    raise SystemExit(f"worker not ready after {timeout} s:\n{path.read_text()[-2000:]}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--items", type=int, default=2000)
    parser.add_argument("--concurrency", type=int, default=16)
    parser.add_argument("--latency", type=float, default=0.1)
    parser.add_argument("--worker-processes", type=int, default=2, help="celery worker --concurrency")
    parser.add_argument("--lanes", type=int, default=None, help="lanes per Celery run (default: the runner's)")
    parser.add_argument(
        "--paths", default="celery,in-process", help="which paths to measure, comma-separated (default: both)"
    )
    args = parser.parse_args()
    args.paths = {p.strip() for p in args.paths.split(",") if p.strip()}
    if not args.paths or args.paths - {"celery", "in-process"}:
        parser.error("--paths takes celery, in-process or both, comma-separated")

    services = services_env()
    scratch = f"bench_judge_{os.getpid()}"
    queue = f"icewater-bench-{os.getpid()}"
    data_dir = tempfile.mkdtemp(prefix="icewater-bench-")
    os.environ.update(
        DATABASE_URL=with_database(services["DATABASE_URL"], scratch),
        CELERY_BROKER_URL=services["CELERY_BROKER_URL"],
        ICEWATER_CELERY_QUEUE=queue,
        ICEWATER_DATA_DIR=data_dir,
        ICEWATER_SECRET_KEY=os.environ.get("ICEWATER_SECRET_KEY", "bench-only-secret-key"),
        ICEWATER_DEBUG="0",
        DJANGO_SETTINGS_MODULE="config.settings",
        BENCH_JUDGE_KEY="bench-key-not-secret",
        ICEWATER_JUDGE_KEY_VARS="BENCH_JUDGE_KEY",
    )
    os.environ.pop("ICEWATER_TEST_DB_NAME", None)
    admin(services["DATABASE_URL"], f'CREATE DATABASE "{scratch}"')
    fake = subprocess.Popen(
        [sys.executable, "-m", "tests.fake_llm", "--latency", str(args.latency)],
        cwd=ROOT,
        stdout=subprocess.PIPE,
        text=True,
    )
    workers: list[subprocess.Popen] = []
    try:
        port = int(fake.stdout.readline())
        run_bench(args, port, queue, Path(data_dir), workers)
    finally:
        for worker in workers:
            stop(worker)
        fake.terminate()
        fake.wait(timeout=10)
        forget_queue(services["CELERY_BROKER_URL"], queue)
        from django.db import connections

        connections.close_all()
        admin(services["DATABASE_URL"], f'DROP DATABASE IF EXISTS "{scratch}" WITH (FORCE)')


def stop(worker: subprocess.Popen) -> None:
    """Warm shutdown of the worker and its pool; killed if it does not go within 30 s."""
    if worker.poll() is not None:
        return
    os.killpg(worker.pid, signal.SIGTERM)
    try:
        worker.wait(timeout=30)
    except subprocess.TimeoutExpired:
        os.killpg(worker.pid, signal.SIGKILL)
        worker.wait(timeout=30)


def run_bench(args, port: int, queue: str, data_dir: Path, workers: list) -> None:
    import django

    django.setup()
    from django.core.management import call_command

    from config.celery import app
    from judging import runner
    from judging.models import JudgeConfig, JudgeRun, Verdict
    from judging.warmup import warm_up
    from labeling.models import Case, EvalSet, Output
    from tests.factories import make_rubric_version
    from tests.judging_helpers import celery_worker_argv

    call_command("migrate", verbosity=0)
    eval_set = EvalSet.objects.create(name="bench")
    cases = Case.objects.bulk_create(
        Case(
            eval_set=eval_set,
            case_id=f"case-{i:05d}",
            input=f"Request {i}: refund order {i}?",
            reference="Refund $40.00.",
        )
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

    def judge(name: str, model: str) -> JudgeConfig:
        return JudgeConfig.objects.create(
            name=name,
            backend="openai",
            model_id=model,
            base_url=f"http://127.0.0.1:{port}/v1",
            api_key_env="BENCH_JUDGE_KEY",
            max_concurrency=args.concurrency,
            timeout_s=30,
            max_retries=2,
        )

    # Different model ids: different judge config hashes, so the second path cannot hit the first one's cache.
    celery_judge, local_judge = judge("bench-celery", "bench-model-a"), judge("bench-local", "bench-model-b")
    bound = args.concurrency / args.latency
    measured_latency = sdk_latency(port)
    measured_bound = args.concurrency / measured_latency
    print(f"items {args.items}, concurrency C={args.concurrency}, fake latency L={args.latency * 1000:.0f} ms")
    print(
        f"bound C/L = {bound:.1f} calls/s; one call through the SDK measured at {measured_latency * 1000:.1f} ms "
        f"(bound with it: {measured_bound:.1f} calls/s)"
    )
    ceiling = sdk_ceiling(port, args.items, args.concurrency)
    bounds = {"C/L": bound, "measured": measured_bound, "floor": ceiling}
    print(
        f"baseline measured now (this run's floor): bare SDK calls, {args.concurrency} threads, no database: "
        f"{ceiling:.1f} calls/s "
        f"= {ceiling / bound:.3f} of the bound (load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores)"
    )

    results = []
    if "celery" in args.paths:
        # Celery path: a real worker, its lanes bounded by the Redis limiter.
        log = data_dir / "worker.log"
        worker = subprocess.Popen(
            celery_worker_argv(f"bench-{os.getpid()}", concurrency=args.worker_processes, loglevel="WARNING"),
            cwd=ROOT,
            env=os.environ.copy(),
            stdout=log.open("wb"),
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
        workers.append(worker)  # stopped by main() whatever happens from here on
        # WARNING level hides the banner's "ready": ping the worker instead.
        deadline = time.monotonic() + 120
        while not app.control.ping(destination=[f"bench-{os.getpid()}@{os.uname().nodename}"], timeout=1.0):
            if worker.poll() is not None or time.monotonic() > deadline:
                raise SystemExit(f"the worker did not start:\n{log.read_text()[-2000:]}")
        scope = runner.Scope(eval_set, rubric, celery_judge)

        before = fake_calls(port, new_window=True)
        run = runner.create_run(scope, mode=JudgeRun.Mode.CELERY)
        cpu = tree_cpu_seconds(worker.pid)
        started = time.monotonic()
        runner.enqueue_lanes(run.pk, **({"lanes": args.lanes} if args.lanes else {}))
        while True:
            run.refresh_from_db(fields=["status"])
            if not run.is_active:
                break
            time.sleep(0.02)
        ended = time.monotonic()
        cpu = tree_cpu_seconds(worker.pid) - cpu
        results.append(report("celery", run, (started, ended), fake_calls(port) - before, bounds, Verdict, port))
        print(
            f"  celery worker CPU: {cpu * 1000 / run.total_items:.2f} ms per item "
            f"({cpu / (ended - started):.2f} of a core; "
            f"load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores)"
        )

    if "in-process" in args.paths:
        # In-process path: the same code in this process, with a local semaphore as the bound.
        scope = runner.Scope(eval_set, rubric, local_judge)
        before = fake_calls(port, new_window=True)
        run = runner.create_run(scope, mode=JudgeRun.Mode.IN_PROCESS)
        warm_up()  # as `run_judge --in-process` does before its run, and a Celery worker when it starts
        cpu = time.process_time()
        started = time.monotonic()
        runner.run_in_process(run)
        ended = time.monotonic()
        cpu = time.process_time() - cpu
        run.refresh_from_db()
        results.append(report("in-process", run, (started, ended), fake_calls(port) - before, bounds, Verdict, port))
        print(
            f"  in-process CPU: {cpu * 1000 / run.total_items:.2f} ms per item in this process "
            f"({cpu / (ended - started):.2f} of a core; "
            f"load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores)"
        )

    # Unchanged data again, both paths: every verdict must come from the cache.
    for name, config in (("in-process", local_judge), ("celery", celery_judge)):
        if name not in args.paths:
            continue
        before = fake_calls(port, new_window=True)
        mode = JudgeRun.Mode.CELERY if name == "celery" else JudgeRun.Mode.IN_PROCESS
        run = runner.create_run(runner.Scope(eval_set, rubric, config), mode=mode)
        started = time.perf_counter()
        if name == "celery":
            runner.enqueue_lanes(run.pk)
            while run.is_active:
                time.sleep(0.02)
                run.refresh_from_db(fields=["status"])
        else:
            runner.run_in_process(run)
        calls = fake_calls(port) - before
        hits = Verdict.objects.filter(run=run, cache_hit=True).count()
        print(
            f"re-run unchanged ({name}): {calls} model calls, {hits} of {run.expected_verdicts} verdicts from "
            f"the cache, {time.perf_counter() - started:.2f} s"
        )
        results.append(calls == 0)
    print("RESULT:", "PASS" if all(results) else "FAIL")


def sdk_latency(port: int, n: int = 20) -> float:
    """Median seconds of one sequential call through the openai SDK to the fake server."""
    import openai

    client = openai.OpenAI(api_key="x", base_url=f"http://127.0.0.1:{port}/v1", max_retries=0)
    timings = []
    for i in range(n):
        started = time.perf_counter()
        client.chat.completions.create(model="probe", messages=[{"role": "user", "content": f"probe {i}"}])
        timings.append(time.perf_counter() - started)
    return statistics.median(timings)


def sdk_ceiling(port: int, items: int, concurrency: int) -> float:
    """Calls per second of bare SDK calls (a judging-sized prompt, C threads, no database, no judging logic):
    what any judge using this client could reach on this machine right now."""
    from concurrent.futures import ThreadPoolExecutor

    import openai
    from openai.types.chat import ChatCompletion

    from judging.prompt import CriterionSpec, Subject, build_request

    request = build_request(
        instruction="Grade it.",
        criteria=[
            CriterionSpec("correct_amount", "The amount is right."),
            CriterionSpec("next_step", "Says what next."),
        ],
        subject=Subject("Request 1: refund order 1?", "Refund $40.00.", [], "I refunded $40.00 for order 1."),
    )
    messages = [{"role": "system", "content": request.system}, {"role": "user", "content": request.user}]
    schema = {"type": "json_schema", "json_schema": {"name": "v", "schema": request.schema}}
    body = {"model": "ceiling", "messages": messages, "response_format": schema}
    client = openai.OpenAI(api_key="x", base_url=f"http://127.0.0.1:{port}/v1", max_retries=0)
    started = time.perf_counter()
    with ThreadPoolExecutor(concurrency) as pool:
        list(pool.map(lambda _: client.post("/chat/completions", body=body, cast_to=ChatCompletion), range(items)))
    return items / (time.perf_counter() - started)


def report(name: str, run, span: tuple[float, float], calls: int, bounds: dict[str, float], verdict_model, port: int):
    """Print one path's figures; True if it reached the goal. `span`: time.monotonic() at its start and end."""
    started, ended = span
    elapsed = ended - started
    verdicts = verdict_model.objects.filter(run=run).count()
    stats = fake_stats(port)
    peak = stats["max_in_flight"]
    rate = run.total_items / elapsed
    bound = bounds["C/L"]
    ok = run.status == "done" and verdicts == run.expected_verdicts and rate >= REQUIRED_RATIO * bound
    print(
        f"{name}: {run.total_items} items ({verdicts} verdicts, {calls} model calls, status {run.status}) in "
        f"{elapsed:.2f} s = {rate:.1f} items/s; bound {bound:.1f}/s; ratio {rate / bound:.3f} "
        f"(needs >= {REQUIRED_RATIO:.2f}) -> {'ok' if ok else 'TOO SLOW'}; ratio to the measured-latency bound "
        f"{rate / bounds['measured']:.3f}; ratio to the baseline {rate / bounds['floor']:.3f}; "
        f"peak calls in flight {peak}"
    )
    if stats["first_at"] and stats["last_at"]:
        # The fake stamps with the same system-wide monotonic clock: where the time went around the calls.
        print(
            f"  {name}: start-up {(stats['first_at'] - started) * 1000:.0f} ms to the first model call, "
            f"{stats['last_at'] - stats['first_at']:.2f} s calling, {(ended - stats['last_at']) * 1000:.0f} ms "
            "from the last answer to the run's end"
        )
    return ok


if __name__ == "__main__":
    main()
