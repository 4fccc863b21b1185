"""Labeling under load as people feel it: annotators flat out on gunicorn, the latency of each request they make.

    python bench/labeling_load.py                    # PostgreSQL: 10,000 outputs, 6 criteria, 16 annotators, 60 s
    python bench/labeling_load.py --embedded         # `make run`'s settings: SQLite, its gunicorn, 8 annotators
    python bench/labeling_load.py --duration 20      # a quicker run (either mode)

PostgreSQL (the default) uses the server of `scripts/services.sh env` (or DATABASE_URL): a scratch database,
migrated, dropped at the end; gunicorn with one sync worker per core (--workers, --threads). --embedded runs
what `make run` runs instead: no DATABASE_URL, so SQLite in a fresh temporary data folder (debug on, the
generated secret key, as on a laptop) and gunicorn with the workers and threads scripts/run.sh gives it.

Either way the data are 10,000 outputs (inputs, tool calls with results, responses) and a six-criterion
rubric with the labeling queue open; then --annotators simulated annotators (threads, http.client, loopback
only) each log in and loop until --duration runs out: Next -> labeling page -> save six criteria (htmx
posts, quotes checked by the server) -> Submit (which also reserves their next output, as in the app).
A request that fails is counted (and its kind, and whether the database said "database is locked"), and
that annotator starts over with Next.

Printed per request type, p50 and p95 of
  server  the time gunicorn spent on the request (its access log, %(D)s: from parsing the request
          to the end of the response; excludes waiting for a free worker), and
  client  the round trip a simulated annotator saw on loopback (includes that wait),
and the goals, each met or not:
  PostgreSQL, 16 annotators: labeling page p95 < 50 ms and save p95 < 100 ms at the server;
  embedded, 8 annotators: 0 failed requests and save p95 < 150 ms at the server.
Afterwards the data are checked (no slot given twice, every submitted annotation complete).
--timeout bounds the whole run.
"""

from __future__ import annotations

import argparse
import http.client
import os
import random
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
from collections import Counter, defaultdict
from pathlib import Path
from urllib.parse import urlencode

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from scratch_database import drop_database, server_env  # noqa: E402 - after the path is set

CRITERIA = ["correct_amount", "grounded", "within_policy", "next_step", "concise", "tone"]
PASSWORD = "bench-password-1"
OPENING = "Thanks for reaching out about order"  # every generated response starts with it: a valid quote
OUTCOMES = ["PASS", "FAIL", "NOT_APPLICABLE", "ABSTAIN"]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def populate(n_outputs: int, n_annotators: int) -> str:
    """The eval set, rubric, users and open queue; returns the eval set id as a string."""
    from django.contrib.auth.hashers import make_password
    from django.db import transaction

    from evals import models as m
    from evals.models import Case, Criterion, EvalSet, Output, Rubric, RubricVersion, User, rubric_content_hash
    from labeling.models import LabelingQueue

    rng = random.Random(7)
    criteria = [
        {"key": k, "definition": f"The reply satisfies {k.replace('_', ' ')}.", "pass_example": "A good reply.",
         "fail_example": "A bad reply."}
        for k in CRITERIA
    ]  # fmt: skip
    with transaction.atomic():
        # One workspace holds the bench's rows; each person's role is a membership in it.
        workspace = m.Workspace.objects.create(slug="bench", name="Bench")
        lead = User.objects.create(username="bench-lead", password=make_password(PASSWORD))
        hashed = make_password(PASSWORD)  # one hash for everyone: hashing is not what is measured
        annotators = User.objects.bulk_create(
            [User(username=f"annotator{i:02d}", password=hashed) for i in range(n_annotators)]
        )
        m.Membership.objects.bulk_create(
            [m.Membership(user=lead, workspace=workspace, role=m.Role.LEAD)]
            + [m.Membership(user=a, workspace=workspace, role=m.Role.ANNOTATOR) for a in annotators]
        )
        eval_set = EvalSet.objects.create(workspace=workspace, name="bench-labeling")
        rubric = Rubric.objects.create(workspace=workspace, name="bench-rubric")
        rv = RubricVersion.objects.create(
            rubric=rubric, version="1", instruction="Grade it.", content_hash=rubric_content_hash("Grade it.", criteria)
        )
        Criterion.objects.bulk_create([Criterion(rubric_version=rv, order=i, **c) for i, c in enumerate(criteria)])
        cases = Case.objects.bulk_create(
            [
                Case(
                    eval_set=eval_set,
                    case_id=f"case-{i:05d}",
                    input=f"Hi, order A{i:05d} arrived damaged. I paid ${rng.randint(10, 300)}.99. Can I get a refund?",
                    reference="Refund the amount paid; money back within 5 business days.",
                )
                for i in range(n_outputs)
            ],
            batch_size=2000,
        )
        Output.objects.bulk_create(
            [
                Output(
                    case=case,
                    agent_version="v1",
                    response=(
                        f"{OPENING} {case.case_id}. I am sorry it arrived damaged. I have issued a refund of "
                        f"${rng.randint(10, 300)}.99 to your original payment method (refund R-{i:05d}). "
                        "You will see it within 5 business days. Is there anything else I can help with?"
                    ),
                    tool_calls=[
                        {
                            "name": "lookup_order",
                            "args": {"order_id": case.case_id},
                            "response": {"amount_paid": rng.randint(10, 300) + 0.99, "status": "delivered"},
                        },
                        {
                            "name": "issue_refund",
                            "args": {"order_id": case.case_id},
                            "response": {"refund_id": f"R-{i:05d}", "eta_business_days": 5},
                        },
                    ],  # fmt: skip
                )
                for i, case in enumerate(cases)
            ],
            batch_size=2000,
        )
        LabelingQueue.objects.create(eval_set=eval_set, rubric_version=rv, opened_by=lead)
    return str(eval_set.pk)


# The goals (issue 12): what a person notices, at the server, under flat-out load (see the docstring).
GOALS_POSTGRES = {"page": 50.0, "save": 100.0}  # p95, ms, with 16 annotators
GOALS_EMBEDDED = {"save": 150.0}  # p95, ms, with 8 annotators; and no failed request at all
LOCKED = "database is locked"


class RequestFailed(Exception):
    def __init__(self, kind: str, status: int, body: str):
        super().__init__(f"{kind} answered {status}: {body[:200]!r}")
        self.kind, self.locked = kind, LOCKED in body


class Client:
    """One simulated annotator: cookies, CSRF token, and the latency of each request it makes."""

    def __init__(self, port: int, samples: dict, lock: threading.Lock, think: float = 0.0):
        self.port, self.samples, self.lock, self.think = port, samples, lock, think
        self.cookies: dict[str, str] = {}

    def request(self, kind: str, method: str, path: str, form: dict | None = None, htmx: bool = False):
        headers = {"Cookie": "; ".join(f"{k}={v}" for k, v in self.cookies.items())}
        body = None
        if method == "POST":
            body = urlencode(form or {})
            headers["Content-Type"] = "application/x-www-form-urlencoded"
            headers["X-CSRFToken"] = self.cookies.get("csrftoken", "")
            headers["Referer"] = f"http://127.0.0.1:{self.port}/"
        if htmx:
            headers["HX-Request"] = "true"
        conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=30)
        started = time.perf_counter()
        conn.request(method, path, body=body, headers=headers)
        response = conn.getresponse()
        data = response.read()
        elapsed = time.perf_counter() - started
        conn.close()
        for header, value in response.getheaders():
            if header.lower() == "set-cookie":
                name, _, rest = value.partition("=")
                self.cookies[name.strip()] = rest.split(";", 1)[0]
        with self.lock:
            self.samples[kind].append(elapsed)
        if self.think:
            time.sleep(self.think)
        if response.status >= 400:
            raise RequestFailed(kind, response.status, data.decode(errors="replace"))
        return response.status, response.getheader("Location"), data.decode()


def annotator(i, port, eval_set_id, start, duration, think, samples, lock, done, failures) -> None:
    rng = random.Random(i)
    client = Client(port, samples, lock, think)
    try:
        client.request("login_page", "GET", "/accounts/login/")
        status, _, _ = client.request(
            "login", "POST", "/accounts/login/", {"username": f"annotator{i:02d}", "password": PASSWORD}
        )
        assert status == 302, "login failed"
    except Exception as exc:  # noqa: BLE001 - reported at the end
        failures.append(("login", False, f"annotator{i:02d}: {exc}"))
        return
    finally:
        # Logging in hashes the password on purpose slowly (PBKDF2); it is not what is measured, so
        # the load starts once everyone is in.
        start.wait(timeout=300)
    deadline = time.perf_counter() + duration
    location = None
    while time.perf_counter() < deadline:
        try:
            if location is None:
                _, location, _ = client.request("next", "POST", f"/queues/{eval_set_id}/next")
            if not location or "/annotations/" not in location:
                return  # nothing left
            path = location.replace(f"http://127.0.0.1:{port}", "")
            _, _, page = client.request("page", "GET", path)
            rv = re.search(r'name="rubric_version" value="(\d+)"', page).group(1)
            pk = path.strip("/").split("/")[-1]
            for key in CRITERIA:
                outcome = rng.choice(OUTCOMES)
                evidence = {"PASS": OPENING, "FAIL": "NONE"}.get(outcome, "")
                form = {"criterion": key, "outcome": outcome, "evidence": evidence, "rubric_version": rv}
                client.request("save", "POST", f"/annotations/{pk}/save", form, htmx=True)
            status, location, _ = client.request("submit", "POST", f"/annotations/{pk}/submit", {"rubric_version": rv})
            assert status == 302, f"submit answered {status}"
            with lock:
                done[0] += 1
        except RequestFailed as exc:
            failures.append((exc.kind, exc.locked, f"annotator{i:02d}: {exc}"))
            location = None  # start over with Next (it resumes the open draft)
        except Exception as exc:  # noqa: BLE001 - reported at the end
            failures.append(("other", False, f"annotator{i:02d}: {exc}"))
            location = None


def percentile(values: list[float], q: float) -> float:
    if not values:
        return float("nan")
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, max(0, round(q * (len(ordered) - 1))))]


def server_times(log: Path) -> dict[str, list[float]]:
    """Seconds gunicorn spent per request type, from the access log lines 'METHOD PATH STATUS MICROSECONDS'."""
    kinds: dict[str, list[float]] = defaultdict(list)
    for line in log.read_text().splitlines():
        parts = line.split()
        if len(parts) != 4:
            continue
        method, path, _status, micros = parts
        if path.endswith("/save"):
            kind = "save"
        elif path.endswith("/submit"):
            kind = "submit"
        elif path.endswith("/next"):
            kind = "next"
        elif path.startswith("/annotations/"):
            kind = "page"
        elif path.startswith("/accounts/login"):
            kind = "login" if method == "POST" else "login_page"
        else:
            continue
        kinds[kind].append(int(micros) / 1e6)
    return kinds


def check_data() -> str:
    from django.db.models import Count

    from labeling.models import Annotation, Label

    dup_slots = (
        Annotation.objects.values("output_id", "rubric_version_id", "slot").annotate(n=Count("id")).filter(n__gt=1)
    )
    assert not dup_slots.exists(), "a slot was given twice"
    submitted = Annotation.objects.filter(status="submitted")
    incomplete = submitted.annotate(n=Count("labels")).exclude(n=len(CRITERIA)).count()
    assert incomplete == 0, f"{incomplete} submitted annotations without all {len(CRITERIA)} labels"
    both = Annotation.objects.values("output_id").annotate(n=Count("id")).filter(n=2).count()
    return (
        f"checked: {submitted.count():,} submitted annotations, each with {len(CRITERIA)} labels; "
        f"{Label.objects.count():,} labels; {both:,} outputs with both slots taken; no slot given twice"
    )


def serve(
    env: dict, log: Path, *, workers: int, threads: int, log_format: str = "%(m)s %(U)s %(s)s %(D)s"
) -> tuple[subprocess.Popen, int]:
    """gunicorn on a free loopback port, its access log lines as `log_format` (the last field gunicorn's own
    microseconds); returns once it accepts connections."""
    port = free_port()
    server = subprocess.Popen(
        [str(ROOT / ".venv/bin/gunicorn"), "config.wsgi:application", "--bind", f"127.0.0.1:{port}",
         "--workers", str(workers), "--threads", str(threads), "--access-logfile", str(log),
         "--access-logformat", log_format, "--log-level", "warning"],
        cwd=ROOT, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )  # fmt: skip
    for _ in range(200):
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=0.2):
                break
        except OSError:
            time.sleep(0.1)
    return server, port


def stop(server: subprocess.Popen) -> None:
    """Stop a server `serve` started: politely, then for sure."""
    server.terminate()
    try:
        server.wait(timeout=20)
    except subprocess.TimeoutExpired:
        server.kill()


def run_sh_server() -> tuple[int, int]:
    """The gunicorn workers and threads `make run` starts (scripts/run.sh), read from the script itself."""
    script = (ROOT / "scripts/run.sh").read_text()
    found = re.search(r"gunicorn .*--workers (\d+) --threads (\d+)", script)
    if found is None:
        raise SystemExit("scripts/run.sh no longer says `gunicorn ... --workers N --threads M`: update this bench")
    return int(found.group(1)), int(found.group(2))


def report(args, mode: str, wall: float, done: int, samples: dict, server_side: dict, failures: list) -> None:
    server_kind = "sync workers" if args.threads == 1 else f"workers x {args.threads} threads"
    print(
        f"{mode}: {args.annotators} annotators (think {args.think:g}s) for {wall:.0f}s on gunicorn ({args.workers} "
        f"{server_kind}, {os.cpu_count()} cores, load average {os.getloadavg()[0]:.1f}): "
        f"{done:,} cases submitted, {sum(len(v) for v in samples.values()):,} requests"
    )
    print(f"{'request':<12}{'n':>7}  {'server p50':>10} {'p95':>8}  {'client p50':>10} {'p95':>8}   (ms)")
    for kind in ("next", "page", "save", "submit"):
        server, client = server_side.get(kind, []), samples.get(kind, [])
        print(
            f"{kind:<12}{len(client):>7}  {percentile(server, 0.5) * 1e3:>10.1f} {percentile(server, 0.95) * 1e3:>8.1f}"
            f"  {percentile(client, 0.5) * 1e3:>10.1f} {percentile(client, 0.95) * 1e3:>8.1f}"
        )
    locked = sum(1 for _, is_locked, _ in failures if is_locked)
    by_kind = ", ".join(f"{k} {n}" for k, n in sorted(Counter(kind for kind, _, _ in failures).items())) or "none"
    print(f"failed requests: {len(failures)} ({by_kind}); {locked} said {LOCKED!r}")
    if failures:
        print(f"  first: {failures[0][2]}")
    goals = GOALS_EMBEDDED if args.embedded else GOALS_POSTGRES
    met = []
    for kind, limit in goals.items():
        p95 = percentile(server_side.get(kind, []), 0.95) * 1e3
        met.append(p95 < limit)
        print(f"goal: {kind} p95 at the server < {limit:.0f} ms: {p95:.1f} ms  {'met' if met[-1] else 'NOT MET'}")
    if args.embedded:
        met.append(not failures)
        print(f"goal: 0 failed requests: {len(failures)}  {'met' if met[-1] else 'NOT MET'}")
    print(f"the simulated annotators themselves ran on the same {os.cpu_count()} cores")
    print("all goals met" if all(met) else "SOME GOALS NOT MET")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--embedded", action="store_true", help="`make run`'s settings: SQLite and its gunicorn")
    parser.add_argument("--outputs", type=int, default=10_000)
    parser.add_argument("--annotators", type=int, help="default 16 on PostgreSQL, 8 embedded (the goals' numbers)")
    parser.add_argument("--duration", type=float, default=60.0, help="seconds of load after everyone logged in")
    parser.add_argument(
        "--workers", type=int, help="gunicorn workers (default: one sync worker per core; embedded: run.sh's)"
    )
    parser.add_argument("--threads", type=int, help="threads per gunicorn worker (default 1; embedded: run.sh's)")
    parser.add_argument(
        "--think", type=float, default=0.0, help="seconds an annotator pauses between requests (default 0: flat out)"
    )
    parser.add_argument("--timeout", type=int, default=600, help="give up after this many seconds")
    args = parser.parse_args()
    if args.embedded:
        workers, threads = run_sh_server()
        args.workers, args.threads = args.workers or workers, args.threads or threads
        args.annotators = args.annotators or 8
    else:
        args.workers, args.threads = args.workers or os.cpu_count() or 2, args.threads or 1
        args.annotators = args.annotators or 16
    if not 1 <= args.annotators <= 64:
        raise SystemExit("--annotators must be between 1 and 64 (this is a loopback bench, not a load generator)")
    signal.signal(signal.SIGALRM, lambda *_: (_ for _ in ()).throw(TimeoutError(f"bench exceeded {args.timeout}s")))
    signal.alarm(args.timeout)

    workdir = Path(tempfile.mkdtemp(prefix="icewater-bench-label-"))
    env = {k: v for k, v in os.environ.items() if k != "DATABASE_URL"}
    env.update(ICEWATER_DATA_DIR=str(workdir), DJANGO_SETTINGS_MODULE="config.settings")
    scratch = None if args.embedded else f"icewater_bench_label_{os.getpid()}"
    admin = server_env(env, embedded=args.embedded, name=scratch or "")
    server = None
    try:
        import django

        django.setup()
        from django.core.management import call_command
        from django.db import connection

        call_command("migrate", verbosity=0)
        t = time.perf_counter()
        eval_set_id = populate(args.outputs, args.annotators)
        with connection.cursor() as cursor:
            cursor.execute("ANALYZE")
        connection.close()
        where = f"SQLite in {workdir}" if args.embedded else "PostgreSQL"
        print(
            f"loaded {args.outputs:,} outputs, {len(CRITERIA)} criteria into {where} in {time.perf_counter() - t:.1f}s"
        )

        log = workdir / "access.log"
        server, port = serve(env, log, workers=args.workers, threads=args.threads)
        warm = Client(port, defaultdict(list), threading.Lock())
        for _ in range(args.workers * 4):  # import everything in every worker before measuring
            warm.request("warm", "GET", "/healthz")
            warm.request("warm", "GET", "/accounts/login/")

        samples: dict[str, list[float]] = defaultdict(list)
        lock, done, failures = threading.Lock(), [0], []
        start = threading.Barrier(args.annotators + 1)
        threads = [
            threading.Thread(
                target=annotator,
                args=(i, port, eval_set_id, start, args.duration, args.think, samples, lock, done, failures),
            )
            for i in range(args.annotators)
        ]
        for thread in threads:
            thread.start()
        start.wait(timeout=300)
        log.write_text("")  # logins are done: measure from here
        for kind in ("login", "login_page"):
            samples.pop(kind, None)
        started = time.perf_counter()
        for thread in threads:
            thread.join(timeout=args.duration + 120)
        wall = time.perf_counter() - started
        time.sleep(0.5)  # let gunicorn flush its access log
        report(args, "embedded" if args.embedded else "PostgreSQL", wall, done[0], samples, server_times(log), failures)
        print(check_data())
        connection.close()
    finally:
        signal.alarm(0)
        if server is not None:
            stop(server)
        if admin is not None:
            drop_database(admin, scratch)
        shutil.rmtree(workdir, ignore_errors=True)


if __name__ == "__main__":
    main()
