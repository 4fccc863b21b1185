"""Does a page's time depend on how many workspaces share the deployment? (issue 36, item 6)

    python bench/workspaces.py                      # 20 workspaces x 5 eval sets x 2,000 outputs, 200 people
    python bench/workspaces.py --workspaces 4 --outputs 500     # a quick look

What it does: a scratch PostgreSQL database (as the other benches: scripts/services.sh's server), migrated.
It fills ONE workspace (5 eval sets of `--outputs` outputs each, a rubric of 4 criteria, a judge config with
verdicts on one eval set, two annotators' labels and gold on 200 outputs, an open queue, 10 people), and
times every page of that workspace for its lead, reviewer and annotator; then fills the other workspaces the
same way (same names: names are per workspace) and times the same pages of the first workspace again.

Times are the server's: the page rendered in this process through Django's test client (no network), the
median of `--rounds` views after one warm-up view; the query count is the number of SQL statements of one view.
Goals (issue 36): every page under 250 ms at the server; query counts independent of the number of workspaces
(tests/config/test_workspace_query_counts.py holds the second with assertNumQueries).
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from scratch_database import drop_database, server_env  # noqa: E402 - after the path is set

GOAL_MS = 250.0
CRITERIA = ["correct_amount", "within_policy", "concise", "grounded"]
PEOPLE = {"annotator": 6, "reviewer": 2, "lead": 2}  # 10 per workspace: 200 people in 20 workspaces
LABELED = 200  # outputs of the first eval set with two labels and gold


def fill_workspace(index: int, n_outputs: int) -> dict:
    """One team: its people, eval sets, rubric, judge, verdicts, labels, gold and queue. Returns what pages need."""
    from django.utils import timezone

    from evals.models import (
        Case,
        Criterion,
        EvalSet,
        Membership,
        Output,
        Rubric,
        RubricVersion,
        User,
        Workspace,
        rubric_content_hash,
    )
    from judging.models import JudgeConfig, JudgeRun, Verdict
    from labeling.models import Annotation, GoldLabel, Label, LabelingQueue

    slug = f"team-{index:02d}"
    ws = Workspace.objects.create(slug=slug, name=f"Team {index}")
    people: dict[str, list] = {}
    for role, count in PEOPLE.items():
        made = User.objects.bulk_create([User(username=f"{slug}-{role}-{i}") for i in range(count)])
        Membership.objects.bulk_create([Membership(user=u, workspace=ws, role=role) for u in made])
        people[role] = made
    criteria = [{"key": k, "definition": f"Is it {k}?"} for k in CRITERIA]
    rubric = Rubric.objects.create(workspace=ws, name="refund-support")
    rv = RubricVersion.objects.create(
        rubric=rubric, version="1", instruction="Grade it.", content_hash=rubric_content_hash("Grade it.", criteria)
    )
    crits = Criterion.objects.bulk_create([Criterion(rubric_version=rv, order=i, **c) for i, c in enumerate(criteria)])
    judge = JudgeConfig.objects.create(workspace=ws, name="gpt-judge", backend="imported", model_id="m-1")
    sets = []
    for s in range(5):
        es = EvalSet.objects.create(workspace=ws, name=f"set-{s}")
        cases = Case.objects.bulk_create(
            [Case(eval_set=es, case_id=f"c{i}", input="Where is my refund?") for i in range(n_outputs)], batch_size=2000
        )
        outputs = Output.objects.bulk_create(
            [Output(case=c, agent_version="v1", response="It is on its way.") for c in cases], batch_size=2000
        )
        sets.append((es, outputs))
    es, outputs = sets[0]
    run = JudgeRun.objects.create(eval_set=es, rubric_version=rv, judge_config=judge, status="done")
    Verdict.objects.bulk_create(
        [
            Verdict(
                run=run,
                output=o,
                rubric_version=rv,
                criterion=c,
                judge_config=judge,
                outcome="PASS" if (o.pk + c.pk) % 5 else "FAIL",
            )  # fmt: skip
            for o in outputs
            for c in crits
        ],
        batch_size=5000,
    )
    now = timezone.now()
    a1, a2 = people["annotator"][:2]
    annotations = Annotation.objects.bulk_create(
        [
            Annotation(output=o, rubric_version=rv, annotator=who, slot=slot, status="submitted", submitted_at=now)
            for o in outputs[:LABELED]
            for slot, who in ((1, a1), (2, a2))
        ],
        batch_size=2000,
    )
    Label.objects.bulk_create(
        [
            Label(annotation=a, criterion=c, outcome="PASS" if (a.output_id + c.pk) % 4 else "FAIL", evidence="NONE")
            for a in annotations
            for c in crits
        ],
        batch_size=5000,
    )
    reviewer = people["reviewer"][0]
    GoldLabel.objects.bulk_create(
        [
            GoldLabel(output=o, rubric_version=rv, criterion=c, outcome="PASS", decided_by=reviewer)
            for o in outputs[:20]
            for c in crits
        ]
    )
    lead = people["lead"][0]
    LabelingQueue.objects.create(eval_set=sets[1][0], rubric_version=rv, opened_by=lead)
    return {
        "workspace": ws, "lead": lead, "reviewer": reviewer, "annotator": people["annotator"][2],
        "eval_set": es, "rubric_version": rv, "judge": judge, "run": run, "output": outputs[0],
        "verdict": Verdict.objects.filter(run=run).order_by("pk").first(),
    }  # fmt: skip


def pages(team: dict) -> dict[str, list[tuple[str, str]]]:
    from django.urls import reverse

    es, rv, judge, run = team["eval_set"], team["rubric_version"], team["judge"], team["run"]
    report = reverse("calibration:report", args=[es.pk, rv.pk, judge.pk])
    lead = [
        ("home", "/"),
        ("calibration", reverse("calibration:index")),
        ("report", report),
        ("drilldown", report + "correct_amount/false-pass/"),
        ("gates", reverse("calibration:gates")),
        ("audit plans", reverse("calibration:audit_plans")),
        ("progress", reverse("overview:progress")),
        ("eval set", reverse("overview:eval_set", args=[es.pk])),
        ("output", reverse("overview:output", args=[team["output"].pk])),
        ("judging", reverse("judging:index")),
        ("judge run", reverse("judging:run", args=[run.pk])),
        ("verdicts", reverse("judging:run_verdicts", args=[run.pk])),
        ("verdict", reverse("judging:verdict", args=[team["verdict"].pk])),
        ("judge config", reverse("judging:config", args=[judge.pk])),
        ("probe runs", reverse("judging:probes")),
        ("import", reverse("formats:upload")),
        ("rubric", reverse("labeling:rubric_version", args=[rv.pk])),
        ("queues", reverse("labeling:queues")),
    ]
    try:
        lead.append(("members", reverse("overview:members")))
    except Exception:  # noqa: BLE001 - the members page is optional in older trees
        pass
    reviewer = [("home", "/"), ("adjudication", reverse("labeling:adjudication_queue"))]
    annotator = [("home", "/"), ("my work", reverse("labeling:my_work"))]
    return {"lead": lead, "reviewer": reviewer, "annotator": annotator}


def measure(team: dict, rounds: int) -> dict[tuple[str, str], tuple[float, int]]:
    """(role, page) -> (median ms, queries of one view)."""
    from django.db import connection
    from django.test import Client
    from django.test.utils import CaptureQueriesContext

    out = {}
    for role, role_pages in pages(team).items():
        client = Client()
        client.force_login(team[role])
        for name, path in role_pages:
            first = client.get(path)  # warm-up: a report's figures are computed and cached here
            if first.status_code != 200:
                raise SystemExit(f"{role} got {first.status_code} from {path}: this bench visits pages that work")
            times = []
            for _ in range(rounds):
                t = time.perf_counter()
                client.get(path)
                times.append((time.perf_counter() - t) * 1e3)
            with CaptureQueriesContext(connection) as queries:
                client.get(path)
            out[(role, name)] = (statistics.median(times), len(queries))
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--workspaces", type=int, default=20, help="workspaces in all (default 20)")
    parser.add_argument("--outputs", type=int, default=2000, help="outputs per eval set (default 2,000; 5 sets each)")
    parser.add_argument("--rounds", type=int, default=5, help="timed views per page after a warm-up (default 5)")
    args = parser.parse_args()
    name = f"icewater_bench_workspaces_{os.getpid()}"
    env = dict(os.environ, ICEWATER_DATA_DIR=tempfile.mkdtemp(prefix="icewater-bench-ws-"))
    env["DJANGO_SETTINGS_MODULE"] = "config.settings"
    admin = server_env(env, embedded=False, name=name)
    try:
        import django

        django.setup()
        from django.core.management import call_command

        call_command("migrate", verbosity=0)
        t = time.perf_counter()
        first = fill_workspace(0, args.outputs)
        print(f"workspace 1 filled in {time.perf_counter() - t:.0f}s ({5 * args.outputs:,} outputs)")
        alone = measure(first, args.rounds)
        t = time.perf_counter()
        for index in range(1, args.workspaces):
            fill_workspace(index, args.outputs)
        from evals.models import Output, User

        print(
            f"{args.workspaces - 1} more filled in {time.perf_counter() - t:.0f}s: {args.workspaces} workspaces, "
            f"{Output.objects.count():,} outputs, {User.objects.count()} people"
        )
        shared = measure(first, args.rounds)
        print(
            f"\n{'role':<10} {'page':<14} {'ms, 1 ws':>9} {f'ms, {args.workspaces} ws':>10} {'queries':>8} {'same?':>6}"
        )
        worst, differ = 0.0, []
        for key, (ms_alone, q_alone) in alone.items():
            ms_shared, q_shared = shared[key]
            worst = max(worst, ms_shared)
            same = q_alone == q_shared
            if not same:
                differ.append(key)
            queries = f"{q_alone}" if same else f"{q_alone}->{q_shared}"
            verdict = "yes" if same else "NO"
            print(f"{key[0]:<10} {key[1]:<14} {ms_alone:>9.1f} {ms_shared:>10.1f} {queries:>8} {verdict:>6}")
        print(f"\ngoal: every page under {GOAL_MS:.0f} ms at the server: slowest {worst:.1f} ms "
              f"({'met' if worst < GOAL_MS else 'MISSED'})")  # fmt: skip
        print(f"goal: query counts independent of the number of workspaces: "
              f"{'met' if not differ else 'MISSED on ' + ', '.join(f'{r} {p}' for r, p in differ)}")  # fmt: skip
    finally:
        from django.db import connections

        connections.close_all()
        drop_database(admin, name)


if __name__ == "__main__":
    main()
