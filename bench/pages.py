"""How long every page of the newcomer's walk takes at the server, on `make run`'s demo, first views included.

    python bench/pages.py                 # SQLite and run.sh's gunicorn, as `make run` serves the demo
    python bench/pages.py --rounds 5      # more rounds after a change

What it does: a scratch data folder with `make run`'s embedded settings (SQLite, debug on), `migrate`, `load_demo`
and the README's walk (the rubric approved, `correct_amount` gating), then gunicorn started exactly as
scripts/run.sh starts it. Each role logs in (ana, rita, lee) and visits its pages:

  cold    the first view of each page in a just-started server (each worker imports what it needs then);
  change  for each further round, ana labels and submits one output and the lead records a gate result
          through the pages (new labels: the report's figures are computed again), then every page once more;
  again   every page again, with nothing changed in between.

Times are gunicorn's own (the access log's %(D)s: from the request read to the response written), so the
client's loopback does not count. Goal (issue 25): every page under 250 ms at the server, first views after a
change included. The cold column is printed for information: a worker's first request pays for imports.
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections import defaultdict
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from labeling_load import Client, RequestFailed, run_sh_server, serve, stop  # noqa: E402 - after the path is set

GOAL_MS = 250.0
PASSWORD = "icewater-demo"


def walk_pages() -> dict[str, list[tuple[str, str]]]:
    """(name, path) per demo user: the pages the README's walk and each role's Home lead to."""
    from django.urls import reverse

    from calibration.models import GateResult
    from evals.models import EvalSet, Output, RubricVersion
    from judging.models import JudgeConfig, JudgeRun, ProbeRun, Verdict

    # The refund team's workspace: the billing team's rubric has the same name (overview/demo/billing.py).
    mine = {"workspace__slug": "refund-support"}
    es = EvalSet.objects.get(name="refund-support-demo", **mine)
    rv = RubricVersion.objects.get(rubric__name="refund-support", rubric__workspace__slug="refund-support", version="1")
    judge = JudgeConfig.objects.get(name="demo-instruments", **mine)
    gpt = JudgeConfig.objects.get(name="demo-gpt", **mine)
    run = JudgeRun.objects.filter(probe_run__isnull=True, judge_config=judge).first()
    probe_run = ProbeRun.objects.first()
    report = reverse("calibration:report", args=[es.pk, rv.pk, judge.pk])
    compare = (
        reverse("calibration:compare")
        + f"?eval_set={es.pk}&left_rubric={rv.pk}&left_judge={judge.pk}&right_rubric={rv.pk}&right_judge={gpt.pk}"
    )
    lead = [
        ("home", "/"),
        ("calibration", reverse("calibration:index")),
        ("report", report),
        ("drilldown", report + "correct_amount/false-fail/"),
        ("compare", compare),
        ("gates", reverse("calibration:gates")),
        ("gate form", reverse("calibration:gate_run")),
        ("progress", reverse("overview:progress")),
        ("eval set", reverse("overview:eval_set", args=[es.pk])),
        ("output", reverse("overview:output", args=[Output.objects.order_by("pk").first().pk])),
        ("judging", reverse("judging:index")),
        ("judge run", reverse("judging:run", args=[run.pk])),
        ("verdicts", reverse("judging:run_verdicts", args=[run.pk])),
        ("verdict", reverse("judging:verdict", args=[Verdict.objects.filter(run=run).order_by("pk").first().pk])),
        ("judge config", reverse("judging:config", args=[judge.pk])),
        ("probe runs", reverse("judging:probes")),
        ("probe run", reverse("judging:probe_run", args=[probe_run.pk])),
        ("import", reverse("formats:upload")),
        ("rubric", reverse("labeling:rubric_version", args=[rv.pk])),
        ("rubric editor", reverse("labeling:rubric_edit", args=[rv.pk])),
    ]
    if GateResult.objects.exists():
        lead.append(("gate result", reverse("calibration:gate_result", args=[GateResult.objects.first().pk])))
    reviewer = [("home", "/"), ("adjudication", reverse("labeling:adjudication_queue"))]
    lead.append(("queues", reverse("labeling:queues")))
    annotator = [("home", "/"), ("my work", reverse("labeling:my_work"))]
    return {"lee": lead, "rita": reviewer, "ana": annotator}


def prepare(workdir: Path, env: dict) -> None:
    """The demo and the README's walk, with the same commands a newcomer runs."""
    py = str(ROOT / ".venv/bin/python")

    def manage(*args: str) -> None:
        subprocess.run([py, "manage.py", *args], cwd=ROOT, env=env, check=True, capture_output=True)

    manage("migrate", "--noinput")
    manage("load_demo")
    walk = ["--workspace", "refund-support", "--rubric", "refund-support@1", "--by", "lee", "--reason", "bench: walk"]
    manage("approve", *walk)
    manage(
        "approve", *walk, "--judge", "demo-instruments", "--eval-set", "refund-support-demo",
        "--gating", "correct_amount", "--min-pass-rate", "0.85",
    )  # fmt: skip


def log_in(port: int, user: str) -> Client:
    client = Client(port, defaultdict(list), threading.Lock())
    client.request("login_page", "GET", "/accounts/login/")
    status, _, _ = client.request("login", "POST", "/accounts/login/", {"username": user, "password": PASSWORD})
    if status != 302:
        raise SystemExit(f"{user} could not log in ({status})")
    return client


CRITERIA = ("correct_amount", "within_policy", "concise", "grounded")  # the demo rubric's


def make_a_change(clients: dict[str, Client], eval_set_id: int, rubric_version_id: int, judge_id: int) -> str:
    """A change that moves the report's figures: ana answers every criterion of her next output (Can't tell,
    which needs no quote) and submits it, so the labels the report reads are new; and the lead records a
    gate result. Returns the path of ana's next labeling page (left open as a draft)."""
    ana = clients["ana"]

    def next_annotation() -> str:
        _, location, _ = ana.request("next", "POST", f"/queues/{eval_set_id}/next")
        found = re.search(r"/annotations/(\d+)/", location or "")
        if found is None:
            raise SystemExit(f"ana got no annotation from Next ({location!r})")
        return found.group(1)

    pk = next_annotation()
    for key in CRITERIA:
        form = {"criterion": key, "outcome": "ABSTAIN", "evidence": "", "rubric_version": rubric_version_id}
        ana.request("save", "POST", f"/annotations/{pk}/save", form, htmx=True)
    ana.request("submit", "POST", f"/annotations/{pk}/submit", {"rubric_version": rubric_version_id})
    gate = {"eval_set": eval_set_id, "rubric_version": rubric_version_id, "judge_config": judge_id}
    clients["lee"].request("gate", "POST", "/calibration/gates/run", {**gate, "agent_version": "v1.4"})
    return f"/annotations/{next_annotation()}/"


def server_ms(log: Path) -> list[tuple[str, float]]:
    """(path, ms) of every GET in gunicorn's access log ('METHOD PATH?QUERY STATUS MICROSECONDS'), in order."""
    out = []
    for line in log.read_text().splitlines():
        parts = line.split()
        if len(parts) == 4 and parts[0] == "GET":
            out.append((parts[1], int(parts[3]) / 1e3))
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--rounds", type=int, default=3, help="rounds of 'change, then every page' (default 3)")
    parser.add_argument("--timeout", type=int, default=900, help="give up after this many seconds")
    args = parser.parse_args()
    signal.signal(signal.SIGALRM, lambda *_: (_ for _ in ()).throw(TimeoutError(f"bench exceeded {args.timeout}s")))
    signal.alarm(args.timeout)
    workdir = Path(tempfile.mkdtemp(prefix="icewater-bench-pages-"))
    env = {k: v for k, v in os.environ.items() if k not in ("DATABASE_URL", "CELERY_BROKER_URL")}
    for name in ("ICEWATER_DEBUG", "ICEWATER_SECRET_KEY", "ICEWATER_SECURE_COOKIES"):
        env.pop(name, None)  # as `make run` has them: debug on, the key generated into the data folder
    env.update(ICEWATER_DATA_DIR=str(workdir), DJANGO_SETTINGS_MODULE="config.settings")
    workers, threads = run_sh_server()
    server = None
    try:
        t = time.perf_counter()
        prepare(workdir, env)
        print(f"demo loaded and the README's walk done in {time.perf_counter() - t:.0f}s ({workdir})")
        os.environ.clear()
        os.environ.update(env)
        import django

        django.setup()
        from evals.models import EvalSet, RubricVersion
        from judging.models import JudgeConfig

        eval_set_id = EvalSet.objects.get(name="refund-support-demo").pk
        rubric_version_id = RubricVersion.objects.get(rubric__name="refund-support", version="1").pk
        change = (eval_set_id, rubric_version_id, JudgeConfig.objects.get(name="demo-instruments").pk)

        log = workdir / "access.log"
        server, port = serve(env, log, workers=workers, threads=threads)
        clients = {user: log_in(port, user) for user in ("lee", "rita", "ana")}
        labeling_page = make_a_change(clients, *change)  # so that a gate result page exists
        pages = walk_pages()
        pages["ana"].append(("labeling page", labeling_page))

        def visit_all() -> dict[tuple[str, str], float]:
            log.write_text("")
            for user, user_pages in pages.items():
                for _, path in user_pages:
                    status, _, _ = clients[user].request(f"{user} {path}", "GET", path)
                    if status != 200:
                        raise SystemExit(f"{user} got {status} from {path}: this bench visits pages that work")
            time.sleep(0.3)  # gunicorn flushes its access log line after the response
            times = iter(server_ms(log))
            return {(user, name): next(times)[1] for user, user_pages in pages.items() for name, _ in user_pages}

        try:
            cold = visit_all()
        except RequestFailed as exc:
            raise SystemExit(f"a page of the walk failed: {exc}; see the paths in {log}") from None
        after_change: dict[tuple[str, str], list[float]] = defaultdict(list)
        again: dict[tuple[str, str], list[float]] = defaultdict(list)
        for _ in range(args.rounds):
            make_a_change(clients, *change)
            for key, ms in visit_all().items():
                after_change[key].append(ms)
            for key, ms in visit_all().items():
                again[key].append(ms)

        print(
            f"gunicorn {workers} workers x {threads} threads on SQLite, {os.cpu_count()} cores, load average "
            f"{os.getloadavg()[0]:.1f}; {args.rounds} rounds; ms at the server"
        )
        print(f"{'user':<6}{'page':<16}{'cold':>8}{'after change (max)':>20}{'again (median)':>16}")
        worst = 0.0
        for user, name in cold:
            changed, steady = after_change[(user, name)], sorted(again[(user, name)])
            worst = max(worst, max(changed), max(steady))
            flag = "" if max(changed + steady) < GOAL_MS else "  over"
            print(
                f"{user:<6}{name:<16}{cold[(user, name)]:>8.0f}{max(changed):>20.0f}"
                f"{steady[len(steady) // 2]:>16.0f}{flag}"
            )
        met = worst < GOAL_MS
        print(f"goal: every page < {GOAL_MS:.0f} ms at the server, after a change too: worst {worst:.0f} ms  "
              f"{'met' if met else 'NOT MET'}")  # fmt: skip
    finally:
        signal.alarm(0)
        if server is not None:
            stop(server)
        shutil.rmtree(workdir, ignore_errors=True)


if __name__ == "__main__":
    main()
