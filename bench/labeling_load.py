"""Labeling under load as people feel it: annotators flat out on gunicorn, the latency of each request they make.

    python bench/labeling_load.py                    # PostgreSQL: 10,000 outputs, 6 criteria, 16 annotators, 60 s
    python bench/labeling_load.py --embedded         # `make run`'s settings: SQLite, its gunicorn, 8 annotators
    python bench/labeling_load.py --duration 20      # a quicker run (either mode)
    python bench/labeling_load.py --crowd 32         # an organisation at once (issue 37): 32 annotators, 4 workers
    python bench/labeling_load.py --crowd 100        # ... and 100 annotators on the same 4 workers

PostgreSQL (the default) uses the server of `scripts/services.sh env` (or DATABASE_URL): a scratch database,
migrated, dropped at the end; gunicorn with one sync worker per core (--workers, --threads). --embedded runs
what `make run` runs instead: no DATABASE_URL, so SQLite in a fresh temporary data folder (debug on, the
generated secret key, as on a laptop) and gunicorn with the workers and threads scripts/run.sh gives it.

Either way the data are 10,000 outputs (inputs, tool calls with results, responses) and a six-criterion
rubric with the labeling queue open; then --annotators simulated annotators (threads, http.client, loopback
only), each signed in already (a stored session, see sessions()), loop until --duration runs out:
Next -> labeling page -> save six criteria (htmx posts, quotes checked by the server) -> Submit (which also
reserves their next output, as in the app).
A request that fails is counted (and its kind, and whether the database said "database is locked"), and
that annotator starts over with Next.

Printed per request type, p50 and p95 of
  server  the time gunicorn spent on the request (its access log, %(D)s: from parsing the request
          to the end of the response; excludes waiting for a free worker), and
  client  the round trip a simulated annotator saw on loopback (includes that wait),
and the goals, each met or not:
  PostgreSQL, 16 annotators: labeling page p95 < 50 ms and save p95 < 100 ms at the server;
  --crowd 32 / --crowd 100 (PostgreSQL, 4 sync workers): labeling page p95 < 250 ms, save p95 < 150 ms;
  embedded, 8 annotators: 0 failed requests and save p95 < 150 ms at the server.
On PostgreSQL, what the database's sessions waited on is sampled during the load (pg_stat_activity and
pg_locks, every 0.2 s) and summed up: where a goal is missed, this says whether requests queued on a lock.

Afterwards the data are checked against what the annotators were told, and the bench exits 1 on a breach:
  - no output handed to more people than its labels need (two, the app's slots), no slot given twice, and
    every annotation Next handed out still there and its annotator's;
  - every acknowledged save in the database: each criterion's current label is the last answer the server
    acknowledged (200) for it; every acknowledged Submit is submitted, with all its criteria's labels.
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
# Issue 37: an organisation labeling at once on a modest server (4 sync workers), flat out.
GOALS_CROWD = {"page": 250.0, "save": 150.0}  # p95, ms, with 32 or 100 annotators
CROWDS = (32, 100)
CROWD_WORKERS = 4
GOALS_EMBEDDED = {"save": 150.0}  # p95, ms, with 8 annotators; and no failed request at all
LOCKED = "database is locked"


class Ledger:
    """What the server told the annotators, to check the database against afterwards (one lock for all)."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.handed: list[tuple[int, int]] = []  # (annotator number, annotation pk) for every output Next gave
        self.saved: dict[tuple[int, str], tuple[str, str]] = {}  # (annotation pk, criterion) -> last acked answer
        self.submitted: set[int] = set()  # annotation pks whose Submit was acknowledged

    def hand(self, i: int, location: str | None) -> None:
        found = re.search(r"/annotations/(\d+)/", location or "")
        if found:
            with self.lock:
                self.handed.append((i, int(found.group(1))))

    def save(self, pk: int, key: str, outcome: str, evidence: str) -> None:
        with self.lock:
            self.saved[(pk, key)] = (outcome, evidence)

    def submit(self, pk: int) -> None:
        with self.lock:
            self.submitted.add(pk)


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


def annotator(i, port, eval_set_id, cookies, start, duration, think, samples, lock, done, failures, ledger) -> None:
    rng = random.Random(i)
    client = Client(port, samples, lock, think)
    client.cookies.update(cookies)  # signed in already (sessions()): the load starts once everyone is ready
    start.wait(timeout=300)
    deadline = time.perf_counter() + duration
    location = None
    while time.perf_counter() < deadline:
        try:
            if location is None:
                _, location, _ = client.request("next", "POST", f"/queues/{eval_set_id}/next")
                ledger.hand(i, location)
            if not location or "/annotations/" not in location:
                return  # nothing left
            path = location.replace(f"http://127.0.0.1:{port}", "")
            _, _, page = client.request("page", "GET", path)
            rv = re.search(r'name="rubric_version" value="(\d+)"', page).group(1)
            pk = int(path.strip("/").split("/")[-1])
            for key in CRITERIA:
                outcome = rng.choice(OUTCOMES)
                evidence = {"PASS": OPENING, "FAIL": "NONE"}.get(outcome, "")
                form = {"criterion": key, "outcome": outcome, "evidence": evidence, "rubric_version": rv}
                client.request("save", "POST", f"/annotations/{pk}/save", form, htmx=True)
                ledger.save(pk, key, outcome, evidence)  # only once the server said 200: acknowledged
            status, location, _ = client.request("submit", "POST", f"/annotations/{pk}/submit", {"rubric_version": rv})
            assert status == 302, f"submit answered {status}"
            ledger.submit(pk)
            ledger.hand(i, location)  # Submit also reserves the next output
            with lock:
                done[0] += 1
        except RequestFailed as exc:
            failures.append((exc.kind, exc.locked, f"annotator{i:02d}: {exc}"))
            location = None  # start over with Next (it resumes the open draft)
        except Exception as exc:  # noqa: BLE001 - reported at the end
            failures.append(("other", False, f"annotator{i:02d}: {exc}"))
            location = None


def sessions(n_annotators: int) -> list[dict[str, str]]:
    """A signed-in session for each annotator, stored as django.contrib.auth.login stores one, and a CSRF cookie
    as the login page sets it: the browser cookies of people who have signed in. Signing in over HTTP would hash
    each password (PBKDF2, slow on purpose); a hundred at once kept the workers busy for minutes before the
    load, and that is not what is measured."""
    import secrets
    from importlib import import_module

    from django.conf import settings
    from django.contrib.auth import BACKEND_SESSION_KEY, HASH_SESSION_KEY, SESSION_KEY

    from evals.models import User

    backend = "django.contrib.auth.backends.ModelBackend"
    if backend not in settings.AUTHENTICATION_BACKENDS:
        raise SystemExit("the bench signs people in with passwords: set ICEWATER_PASSWORD_LOGIN")
    store = import_module(settings.SESSION_ENGINE).SessionStore
    users = {u.username: u for u in User.objects.filter(username__startswith="annotator")}
    cookies = []
    for i in range(n_annotators):
        user = users[f"annotator{i:02d}"]
        session = store()
        session[SESSION_KEY], session[BACKEND_SESSION_KEY] = str(user.pk), backend
        session[HASH_SESSION_KEY] = user.get_session_auth_hash()
        session.create()
        cookie = secrets.token_hex(16)  # a CSRF secret: 32 characters, as Django's cookie holds
        cookies.append({settings.SESSION_COOKIE_NAME: session.session_key, settings.CSRF_COOKIE_NAME: cookie})
    return cookies


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


def check_data(ledger: Ledger) -> list[str]:
    """The database against what the annotators were told (see the docstring); the breaches, or []."""
    from django.db.models import Count

    from labeling.models import Annotation, Label
    from labeling.queue import APP_SLOTS

    problems = []
    dup_slots = (
        Annotation.objects.values("output_id", "rubric_version_id", "slot").annotate(n=Count("id")).filter(n__gt=1)
    )
    if dup_slots.exists():
        problems.append(f"{dup_slots.count()} slots given twice")
    submitted = Annotation.objects.filter(status="submitted")
    incomplete = submitted.annotate(n=Count("labels")).exclude(n=len(CRITERIA)).count()
    if incomplete:
        problems.append(f"{incomplete} submitted annotations without all {len(CRITERIA)} labels")

    # Handed out: every annotation Next gave is still there and its annotator's (no reservation lapses in a
    # run), and no output went to more people than its labels need.
    rows = {
        pk: (output_id, username)
        for pk, output_id, username in Annotation.objects.values_list("pk", "output_id", "annotator__username")
    }
    people_of: dict[int, set[str]] = defaultdict(set)
    for i, pk in ledger.handed:
        if pk not in rows:
            problems.append(f"annotation {pk} handed to annotator{i:02d} is gone")
            continue
        output_id, username = rows[pk]
        if username != f"annotator{i:02d}":
            problems.append(f"annotation {pk} handed to annotator{i:02d} belongs to {username}")
        people_of[output_id].add(f"annotator{i:02d}")
    over = {o: p for o, p in people_of.items() if len(p) > len(APP_SLOTS)}
    if over:
        problems.append(
            f"{len(over)} outputs handed to more than {len(APP_SLOTS)} people, e.g. {next(iter(over.items()))}"
        )

    # Acknowledged: each criterion's current label is the last answer the server said 200 to.
    current = {
        (pk, key): (outcome, evidence)
        for pk, key, outcome, evidence in Label.objects.current()
        .filter(annotation_id__in={pk for pk, _ in ledger.saved})
        .values_list("annotation_id", "criterion__key", "outcome", "evidence")
    }
    lost = [(k, v, current.get(k)) for k, v in ledger.saved.items() if current.get(k) != v]
    if lost:
        problems.append(f"{len(lost)} acknowledged saves not in the database, e.g. {lost[0]}")
    not_submitted = ledger.submitted - set(submitted.values_list("pk", flat=True))
    if not_submitted:
        problems.append(
            f"{len(not_submitted)} acknowledged submits not submitted, e.g. annotation {min(not_submitted)}"
        )
    both = Annotation.objects.values("output_id").annotate(n=Count("id")).filter(n=2).count()
    print(
        f"checked: {len(ledger.handed):,} hand-outs to {len({i for i, _ in ledger.handed})} people over "
        f"{len(people_of):,} outputs (at most {max((len(p) for p in people_of.values()), default=0)} people each); "
        f"{len(ledger.saved):,} acknowledged saves and {len(ledger.submitted):,} acknowledged submits against "
        f"{submitted.count():,} submitted annotations, {Label.objects.count():,} labels, {both:,} outputs with both "
        f"slots taken"
    )
    return problems


class LockSampler(threading.Thread):
    """What the bench database's sessions wait on, sampled every `every` seconds on a connection of its own:
    how many are running a statement, how many wait for a lock (and on which kind and table), and how many
    distinct server processes served the run (many more than gunicorn's workers means connection churn)."""

    QUERY = """
        SELECT a.pid, a.backend_start, a.state, a.wait_event_type, a.wait_event,
               (SELECT string_agg(DISTINCT l.locktype || coalesce(':' || c.relname, ''), ',')
                  FROM pg_locks l LEFT JOIN pg_class c ON c.oid = l.relation
                 WHERE l.pid = a.pid AND NOT l.granted)
          FROM pg_stat_activity a
         WHERE a.datname = current_database() AND a.pid <> pg_backend_pid() AND a.backend_type = 'client backend'
    """

    def __init__(self, url: str, every: float = 0.2):
        super().__init__(daemon=True)
        self.url, self.every = url, every
        self.halt = threading.Event()
        self.samples = 0
        self.active = 0
        self.waits: Counter = Counter()  # "Lock: transactionid" etc., per session-sample
        self.backends: set[tuple[int, object]] = set()

    def run(self) -> None:
        import psycopg

        with psycopg.connect(self.url, autocommit=True) as conn:
            while not self.halt.wait(self.every):
                rows = conn.execute(self.QUERY).fetchall()
                self.samples += 1
                for pid, started, state, wait_type, wait, not_granted in rows:
                    self.backends.add((pid, started))
                    if state != "active":
                        continue
                    self.active += 1
                    if wait_type:
                        what = f"{wait_type}: {wait}" + (f" ({not_granted})" if not_granted else "")
                        self.waits[what] += 1

    def summary(self) -> str:
        n = max(self.samples, 1)
        lines = [
            f"database, sampled {self.samples} times: {self.active / n:.2f} statements running on average, "
            f"{len(self.backends)} server processes served the run"
        ]
        for what, count in self.waits.most_common(6):
            lines.append(f"  waiting on {what}: {count / n:.2f} sessions on average")
        if not self.waits:
            lines.append("  no session was seen waiting")
        return "\n".join(lines)


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


def warm_up(port: int, workers: int, patience: float = 180.0) -> None:
    """Import everything in every worker before measuring. gunicorn's socket accepts before its workers have
    imported Django, and on a busy machine that import took longer than a request's 30 s timeout: a request that
    times out here is asked again, until `patience` runs out."""
    warm = Client(port, defaultdict(list), threading.Lock())
    deadline = time.perf_counter() + patience
    for _ in range(workers * 4):
        for path in ("/healthz", "/accounts/login/"):
            while True:
                try:
                    warm.request("warm", "GET", path)
                    break
                except OSError:  # socket.timeout is an OSError
                    if time.perf_counter() > deadline:
                        raise


def cpu_seconds(pids: list[int]) -> float:
    """User + system CPU seconds the processes have used so far (Linux /proc; 0 for one that is gone)."""
    total = 0
    for pid in pids:
        try:
            fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        total += int(fields[11]) + int(fields[12])  # utime, stime (fields 14 and 15 of stat(5))
    return total / os.sysconf("SC_CLK_TCK")


def children(pid: int) -> list[int]:
    """The processes whose parent is `pid` (gunicorn's workers)."""
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                stat = (entry / "stat").read_text()
            except OSError:
                continue
            if int(stat.rsplit(")", 1)[1].split()[1]) == pid:
                found.append(int(entry.name))
    return found


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


def report(
    args, mode: str, wall: float, done: int, samples: dict, server_side: dict, failures: list, cpu: tuple[float, float]
) -> None:
    server_kind = "sync workers" if args.threads == 1 else f"workers x {args.threads} threads"
    print(
        f"{mode}: {args.annotators} annotators (think {args.think:g}s) for {wall:.0f}s on gunicorn ({args.workers} "
        f"{server_kind}, {os.cpu_count()} cores, load average {os.getloadavg()[0]:.1f}): "
        f"{done:,} cases submitted, {sum(len(v) for v in samples.values()):,} requests"
    )
    # CPU time is what a request costs whatever else the machine runs; wall times stretch with the load.
    requests = sum(len(v) for v in server_side.values()) or 1
    print(
        f"CPU: gunicorn's workers {cpu[0]:.1f} s ({cpu[0] / requests * 1e3:.1f} ms a request), the simulated "
        f"annotators {cpu[1]:.1f} s, of {wall * (os.cpu_count() or 1):.0f} core-seconds"
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
    goals = GOALS_EMBEDDED if args.embedded else GOALS_CROWD if args.crowd else GOALS_POSTGRES
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
    parser.add_argument(
        "--crowd",
        type=int,
        choices=CROWDS,
        help=f"issue 37's runs: this many annotators on PostgreSQL, {CROWD_WORKERS} sync workers, its goals",
    )
    parser.add_argument("--duration", type=float, default=60.0, help="seconds of load")
    parser.add_argument(
        "--workers", type=int, help="gunicorn workers (default: one sync worker per core; embedded: run.sh's)"
    )
    parser.add_argument("--threads", type=int, help="threads per gunicorn worker (default 1; embedded: run.sh's)")
    parser.add_argument(
        "--think", type=float, default=0.0, help="seconds an annotator pauses between requests (default 0: flat out)"
    )
    parser.add_argument("--timeout", type=int, default=600, help="give up after this many seconds")
    parser.add_argument(
        "--profile",
        metavar="FILE",
        help="sample gunicorn's workers with py-spy during the load (collapsed stacks to FILE; `pip install py-spy`)",
    )
    args = parser.parse_args()
    if args.crowd and args.embedded:
        raise SystemExit("--crowd is a PostgreSQL run; leave out --embedded")
    if args.crowd:
        args.annotators = args.annotators or args.crowd
        args.workers, args.threads = args.workers or CROWD_WORKERS, args.threads or 1
    elif args.embedded:
        workers, threads = run_sh_server()
        args.workers, args.threads = args.workers or workers, args.threads or threads
        args.annotators = args.annotators or 8
    else:
        args.workers, args.threads = args.workers or os.cpu_count() or 2, args.threads or 1
        args.annotators = args.annotators or 16
    if not 1 <= args.annotators <= max(CROWDS):
        raise SystemExit(
            f"--annotators must be between 1 and {max(CROWDS)} (this is a loopback bench, not a load generator)"
        )
    signal.signal(signal.SIGALRM, lambda *_: (_ for _ in ()).throw(TimeoutError(f"bench exceeded {args.timeout}s")))
    signal.alarm(args.timeout)

    workdir = Path(tempfile.mkdtemp(prefix="icewater-bench-label-"))
    env = {k: v for k, v in os.environ.items() if k != "DATABASE_URL"}
    env.update(ICEWATER_DATA_DIR=str(workdir), DJANGO_SETTINGS_MODULE="config.settings")
    scratch = None if args.embedded else f"icewater_bench_label_{os.getpid()}"
    admin = server_env(env, embedded=args.embedded, name=scratch or "")
    server = None
    problems: list[str] = []
    try:
        import django

        django.setup()
        from django.core.management import call_command
        from django.db import connection

        call_command("migrate", verbosity=0)
        t = time.perf_counter()
        eval_set_id = populate(args.outputs, args.annotators)
        cookies = sessions(args.annotators)
        with connection.cursor() as cursor:
            cursor.execute("ANALYZE")
        connection.close()
        where = f"SQLite in {workdir}" if args.embedded else "PostgreSQL"
        print(
            f"loaded {args.outputs:,} outputs, {len(CRITERIA)} criteria into {where} in {time.perf_counter() - t:.1f}s"
        )

        log = workdir / "access.log"
        server, port = serve(env, log, workers=args.workers, threads=args.threads)
        warm_up(port, args.workers)

        samples: dict[str, list[float]] = defaultdict(list)
        lock, done, failures, ledger = threading.Lock(), [0], [], Ledger()
        start = threading.Barrier(args.annotators + 1)
        threads = [
            threading.Thread(
                target=annotator,
                args=(
                    i,
                    port,
                    eval_set_id,
                    cookies[i],
                    start,
                    args.duration,
                    args.think,
                    samples,
                    lock,
                    done,
                    failures,
                    ledger,
                ),
            )
            for i in range(args.annotators)
        ]
        for thread in threads:
            thread.start()
        start.wait(timeout=300)
        log.write_text("")  # measure from here
        workers = children(server.pid)
        cpu_before = cpu_seconds(workers), time.process_time()
        profiler = None
        if args.profile:
            profiler = subprocess.Popen(
                [shutil.which("py-spy") or str(ROOT / ".venv/bin/py-spy"), "record", "--pid", str(server.pid),
                 "--subprocesses", "--duration", str(int(args.duration)), "--rate", "100", "--format", "raw",
                 "--output", args.profile, "--nonblocking", "--idle"],
                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
            )  # fmt: skip
        sampler = None if args.embedded else LockSampler(env["DATABASE_URL"])
        if sampler is not None:
            sampler.start()
        started = time.perf_counter()
        for thread in threads:
            thread.join(timeout=args.duration + 120)
        wall = time.perf_counter() - started
        cpu = cpu_seconds(workers) - cpu_before[0], time.process_time() - cpu_before[1]
        if sorted(children(server.pid)) != sorted(workers):
            print(f"gunicorn replaced workers during the load: {sorted(workers)} -> {sorted(children(server.pid))}")
        if profiler is not None:
            profiler.wait(timeout=60)
        if sampler is not None:
            sampler.halt.set()
            sampler.join(timeout=5)
        time.sleep(0.5)  # let gunicorn flush its access log
        report(
            args,
            "embedded" if args.embedded else "PostgreSQL",
            wall,
            done[0],
            samples,
            server_times(log),
            failures,
            cpu,
        )
        if sampler is not None:
            print(sampler.summary())
        problems = check_data(ledger)
        connection.close()
        for problem in problems:
            print(f"DATA CHECK FAILED: {problem}")
        if not problems:
            print("data checked: no output over-handed, every acknowledged save and submit in the database")
    finally:
        signal.alarm(0)
        if server is not None:
            stop(server)
        if admin is not None:
            drop_database(admin, scratch)
        shutil.rmtree(workdir, ignore_errors=True)
    if problems:
        raise SystemExit(1)


if __name__ == "__main__":
    main()
