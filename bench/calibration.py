"""Calibration report speed on PostgreSQL, as a ratio to just loading the same rows into DataFrames.

    python bench/calibration.py                     # 20,000 outputs x 10 criteria
    python bench/calibration.py --outputs 5000      # a quicker run
    python bench/calibration.py --outputs 100000 --criteria 4   # issue 37's size

Uses the PostgreSQL of `scripts/services.sh env` (or DATABASE_URL): creates a scratch database,
migrates it, and fills it with COPY: 20,000 outputs, a 10-criterion rubric, two submitted
annotations per output (400,000 labels), adjudicated gold where the annotators disagree, and one
judge run (200,000 verdicts, with some ERROR, ABSTAIN and N/A, and quotes not found).

It then times, best of --repeat runs, interleaved:
  report  calibration.report.compose(): loading, gold, current verdicts, kappa with its
          2,000-replicate bootstrap interval, TPR/TNR/balanced accuracy/F1 with theirs, the human
          ceiling (mean pairwise kappa and Krippendorff's alpha, each with its interval, and A vs B),
          the gold policy's ties and items without gold, for all 10 criteria, and the warnings;
  floor   hand-written SQL for the same label, gold and verdict rows, fetched into DataFrames and
          nothing else (what any report must at least do).
and prints both, their ratio (goal: within 2x) and the report's query count, also on a small eval set
to show that it does not grow.

Then the pages that show report figures, as a lead at the test client (the server's time, no network): the
report, Compare, the calibration overview, Home (with a gating mark on the large set, so it checks its tier), the
drilldown behind a false-pass cell (its first page of items) and the annotators' agreement.
On the large set they read the rows a worker stored (calibration/report/stored_report.py): the bench runs the
worker's computation in its own process first (its time is printed as `worker`), then times each page warm, best
of --repeat (goal: under 250 ms), and the first view before any worker has computed (it must not compute either).
The scratch database is dropped at the end; --timeout bounds the run.
"""

from __future__ import annotations

import argparse
import json
import os
import secrets
import shutil
import signal
import sys
import tempfile
import time
from datetime import UTC, datetime
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from scratch_database import create_database, database_url, drop_database  # noqa: E402 - after the path is set

CRITERIA = [f"criterion_{i:02d}" for i in range(10)]
OUTCOMES = np.array(["PASS", "FAIL", "NOT_APPLICABLE", "ABSTAIN", "ERROR"])


def copy_rows(model, rows: list[dict]) -> None:
    """COPY rows into the model's table; columns not given get the field's default (or NULL)."""
    from django.db import connection

    now = datetime.now(UTC)
    given = set(rows[0])
    # An id not given comes from the table's sequence.
    fields = [f for f in model._meta.concrete_fields if not (f.primary_key and f.attname not in given)]
    template = {}
    for f in fields:
        if f.attname in given:
            continue
        if getattr(f, "auto_now_add", False) or getattr(f, "auto_now", False):
            template[f.attname] = now
        else:  # the model default, "" for text that may be blank, else None
            value = f.get_default()
            template[f.attname] = json.dumps(value) if isinstance(value, dict | list) else value
    columns = [f.attname for f in fields]
    quoted = ", ".join(f'"{c}"' for c in columns)
    sql = f'COPY "{model._meta.db_table}" ({quoted}) FROM STDIN'
    with connection.cursor() as cursor, cursor.cursor.copy(sql) as copy:
        for row in rows:
            full = {**template, **row}
            copy.write_row([full[c] for c in columns])


def reset_sequences(*models) -> None:
    from django.core.management.color import no_style
    from django.db import connection

    with connection.cursor() as cursor:
        for sql in connection.ops.sequence_reset_sql(no_style(), list(models)):
            cursor.execute(sql)


def populate(n_outputs: int, eval_set_name: str, id_base: int, seed: int) -> dict:
    """One eval set with n outputs, labeled by two annotators, gold, and one judge run. Returns ids."""
    from evals import models as m
    from evals.models import Case, Criterion, EvalSet, Output, Role, Rubric, RubricVersion, User, rubric_content_hash
    from judging.models import JudgeConfig, JudgeRun, Verdict
    from labeling.models import Annotation, GoldLabel, Label

    rng = np.random.default_rng(seed)
    # Everything the bench makes is one workspace's, as every row must be.
    workspace, _ = m.Workspace.objects.get_or_create(slug="bench", defaults={"name": "Bench"})
    people = []
    for username, role in (("amy", Role.ANNOTATOR), ("bo", Role.ANNOTATOR), ("rey", Role.REVIEWER)):
        person, _ = User.objects.get_or_create(username=username)
        m.Membership.objects.get_or_create(user=person, workspace=workspace, defaults={"role": role})
        people.append(person)
    amy, bo, rey = people
    es = EvalSet.objects.create(workspace=workspace, name=eval_set_name)
    criteria_dicts = [{"key": k, "definition": f"Definition of {k}."} for k in CRITERIA]
    rubric, _ = Rubric.objects.get_or_create(workspace=workspace, name="bench")
    rv = RubricVersion.objects.filter(rubric=rubric).first()
    if rv is None:
        rv = RubricVersion.objects.create(
            rubric=rubric,
            version="1",
            instruction="Grade it.",
            content_hash=rubric_content_hash("Grade it.", criteria_dicts),
        )
        for i, c in enumerate(criteria_dicts):
            Criterion.objects.create(rubric_version=rv, order=i, **c)
    criteria = list(rv.criteria.order_by("order").values_list("id", flat=True))
    judge, _ = JudgeConfig.objects.get_or_create(
        workspace=workspace, name="bench-judge", defaults={"backend": "imported", "model_id": "m-1"}
    )
    run = JudgeRun.objects.create(eval_set=es, rubric_version=rv, judge_config=judge, status="done")

    n, k = n_outputs, len(criteria)
    out_ids = id_base + np.arange(n)
    copy_rows(
        Case, [{"id": int(i), "eval_set_id": es.id, "case_id": f"case-{i}", "input": "Question?"} for i in out_ids]
    )
    copy_rows(
        Output, [{"id": int(i), "case_id": int(i), "agent_version": "v1", "response": "An answer."} for i in out_ids]
    )
    now = datetime.now(UTC)
    annotations = []
    for slot, who in ((1, amy), (2, bo)):
        annotations += [
            {
                "id": int(2 * i + slot - 1),
                "output_id": int(i),
                "rubric_version_id": rv.id,
                "annotator_id": who.id,
                "slot": slot,
                "status": "submitted",
                "source": "import",
                "submitted_at": now,
            }
            for i in out_ids
        ]
    copy_rows(Annotation, annotations)

    # Truth per item; each annotator flips 8% of it (so ~15% disagree), the judge flips 12%.
    truth = np.where(rng.random((n, k)) < 0.7, "PASS", "FAIL")
    flip = {"PASS": "FAIL", "FAIL": "PASS"}

    def noisy(p: float) -> np.ndarray:
        mask = rng.random((n, k)) < p
        return np.where(mask, np.vectorize(flip.get)(truth), truth)

    a, b = noisy(0.08), noisy(0.08)
    labels = []
    for slot, said in ((1, a), (2, b)):
        for row, i in enumerate(out_ids):
            ann = int(2 * i + slot - 1)
            labels += [
                {"annotation_id": ann, "criterion_id": c, "outcome": said[row, j], "evidence": "NONE"}
                for j, c in enumerate(criteria)
            ]
    copy_rows(Label, labels)
    gold = [
        {
            "output_id": int(out_ids[row]),
            "rubric_version_id": rv.id,
            "criterion_id": criteria[j],
            "outcome": truth[row, j],
            "decided_by_id": rey.id,
            "rationale": "checked",
            "source": "import",
        }
        for row, j in zip(*np.nonzero(a != b), strict=True)
    ]
    copy_rows(GoldLabel, gold)
    verdict = noisy(0.12)
    other = rng.random((n, k))
    verdict = np.where(other < 0.010, "ERROR", verdict)
    verdict = np.where((other >= 0.010) & (other < 0.015), "ABSTAIN", verdict)
    verdict = np.where((other >= 0.015) & (other < 0.020), "NOT_APPLICABLE", verdict)
    found = rng.random((n, k)) >= 0.01
    raw = '{"criteria": [{"criterion": "%s", "evidence": "An answer.", "verdict": "%s"}]}'
    copy_rows(
        Verdict,
        [
            {
                "run_id": run.id,
                "output_id": int(i),
                "rubric_version_id": rv.id,
                "criterion_id": c,
                "judge_config_id": judge.id,
                "judge_config_hash": judge.content_hash,
                "model_id": "m-1",
                "sample": 0,
                "outcome": verdict[row, j],
                "evidence": "An answer.",
                "evidence_found": None if verdict[row, j] == "ERROR" else bool(found[row, j]),
                "raw_output": raw % (CRITERIA[j], verdict[row, j]),
            }
            for row, i in enumerate(out_ids)
            for j, c in enumerate(criteria)
        ],
    )
    reset_sequences(Case, Output, Annotation, Label, GoldLabel, Verdict)
    return {"eval_set": es.name, "rubric": rv.ref, "judge": judge.name, "labels": len(labels), "gold": len(gold)}


def resolve(scope: dict) -> dict:
    """Fresh objects by name, as `manage.py calibration_report` finds them."""
    from evals.lookup import eval_set_named
    from evals.models import RubricVersion, Workspace
    from judging.judge_lookup import judge_named

    workspace = Workspace.objects.get(slug="bench")
    return {
        "eval_set": eval_set_named(scope["eval_set"], workspace),
        "rubric_version": RubricVersion.objects.by_ref(scope["rubric"], workspace),
        "judge_config": judge_named(scope["judge"], workspace),
    }


FLOOR_SQL = {
    "labels": """
        SELECT a.output_id, l.criterion_id, l.annotation_id, a.annotator_id, a.slot, l.outcome,
               l.quotes_outside_response
        FROM labeling_label l
        JOIN labeling_annotation a ON a.id = l.annotation_id
        JOIN labeling_output o ON o.id = a.output_id
        JOIN labeling_case c ON c.id = o.case_id
        WHERE l.is_current AND a.status = 'submitted' AND a.rubric_version_id = %(rv)s AND c.eval_set_id = %(es)s""",
    "gold": """
        SELECT g.output_id, g.criterion_id, g.outcome
        FROM labeling_goldlabel g
        JOIN labeling_output o ON o.id = g.output_id
        JOIN labeling_case c ON c.id = o.case_id
        WHERE g.is_current AND g.rubric_version_id = %(rv)s AND c.eval_set_id = %(es)s""",
    "verdicts": """
        SELECT v.output_id, v.criterion_id, v.run_id, v.sample, v.outcome, v.evidence_found
        FROM judging_verdict v
        JOIN labeling_output o ON o.id = v.output_id
        JOIN labeling_case c ON c.id = o.case_id
        WHERE v.judge_config_id = %(jc)s AND v.rubric_version_id = %(rv)s AND c.eval_set_id = %(es)s""",
}


def floor(scope: dict) -> tuple[float, int]:
    """Seconds to fetch the label, gold and verdict rows into DataFrames, and how many rows."""
    import pandas as pd
    from django.db import connection

    params = {"rv": scope["rubric_version"].id, "es": scope["eval_set"].id, "jc": scope["judge_config"].id}
    start = time.perf_counter()
    rows = 0
    with connection.cursor() as cursor:
        for sql in FLOOR_SQL.values():
            cursor.execute(sql, params)
            df = pd.DataFrame.from_records(cursor.fetchall(), coerce_float=False)
            rows += len(df)
    return time.perf_counter() - start, rows


def report(scope: dict) -> tuple[float, int, object]:
    from django.core.cache import caches
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    from calibration.report.compose import calibration_report

    # The figures are cached by the content of their data (calibration/data/content_cache.py): every timed run
    # computes them anew, as the first view after a new label does.
    caches["default"].clear()
    start = time.perf_counter()
    with CaptureQueriesContext(connection) as queries:
        result = calibration_report(
            eval_set=scope["eval_set"], rubric_version=scope["rubric_version"], judge_config=scope["judge_config"]
        )
    return time.perf_counter() - start, len(queries), result


def pages(scope: dict, repeat: int) -> None:
    """Time the pages that show report figures on the large set (module docstring)."""
    from django.db import connection
    from django.test import Client
    from django.test.utils import CaptureQueriesContext
    from django.urls import reverse

    from calibration.models import GatingMark, ReportFigures
    from calibration.report import stored_report
    from evals.models import Membership, Role, User, Workspace

    es, rv, jc = scope["eval_set"], scope["rubric_version"], scope["judge_config"]
    workspace = Workspace.objects.get(slug="bench")
    lead, _ = User.objects.get_or_create(username="lee")
    Membership.objects.get_or_create(user=lead, workspace=workspace, defaults={"role": Role.LEAD})
    GatingMark.objects.create(
        rubric_version=rv,
        judge_config=jc,
        criterion=rv.criteria.order_by("order").first(),
        rubric_content_hash=rv.content_hash,
        judge_config_hash=jc.content_hash,
        calibration_eval_set=es,
        tier="acceptable",
        reason="bench",
        marked_by=lead,
    )
    stored_report.send = lambda row_id: None  # no broker here: the bench computes in its own process below
    client = Client()
    client.force_login(lead)
    compare = f"{reverse('calibration:compare')}?eval_set={es.pk}&left_rubric={rv.pk}&left_judge={jc.pk}"
    urls = {
        "report": reverse("calibration:report", args=[es.pk, rv.pk, jc.pk]),
        "compare": f"{compare}&right_rubric={rv.pk}&right_judge={jc.pk}",
        "overview": reverse("calibration:index"),
        "home": reverse("home"),
        # The items behind a confusion cell (its first page) and the annotators' agreement: they show report figures.
        "drilldown": reverse(
            "calibration:drilldown", args=[es.pk, rv.pk, jc.pk, rv.criteria.order_by("order").first().key, "false-pass"]
        ),
        "annotators": reverse("calibration:annotator_agreement", args=[es.pk, rv.pk]),
    }
    first = {}
    for name, url in urls.items():
        start = time.perf_counter()
        assert client.get(url).status_code == 200, name
        first[name] = time.perf_counter() - start
    worker = 0.0
    for row in ReportFigures.objects.all():
        start = time.perf_counter()
        stored_report.recompute(row.pk)
        worker = max(worker, time.perf_counter() - start)
    print(f"worker: the stored report computed in {worker:6.2f} s (off the request path)")
    print("pages that show report figures (a lead, at the test client; goal: warm under 250 ms):")
    for name, url in urls.items():
        client.get(url)
        times = []
        for _ in range(repeat):
            start = time.perf_counter()
            with CaptureQueriesContext(connection) as queries:
                body = client.get(url).content.decode()
            times.append(time.perf_counter() - start)
            assert "updating" not in body, name
        warm = min(times) * 1000
        print(
            f"  {name:10s} warm {warm:6.0f} ms (best of {repeat}; {len(queries)} queries)"
            f"  {'ok' if warm < 250 else 'OVER'}   first view, nothing stored yet: {first[name] * 1000:6.0f} ms"
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--outputs", type=int, default=20_000)
    parser.add_argument("--criteria", type=int, default=10, help="criteria in the rubric (issue 37 asks for 4)")
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--timeout", type=int, default=900, help="give up after this many seconds")
    args = parser.parse_args()
    CRITERIA[:] = [f"criterion_{i:02d}" for i in range(args.criteria)]
    signal.signal(signal.SIGALRM, lambda *_: (_ for _ in ()).throw(TimeoutError(f"bench exceeded {args.timeout}s")))
    signal.alarm(args.timeout)

    base_url = database_url()
    scratch = f"icewater_bench_cal_{os.getpid()}"
    admin = create_database(base_url, scratch)
    workdir = Path(tempfile.mkdtemp(prefix="icewater-bench-cal-"))
    try:
        os.environ.update(
            DATABASE_URL=base_url.rsplit("/", 1)[0] + "/" + scratch,
            ICEWATER_DATA_DIR=str(workdir),
            ICEWATER_SECRET_KEY=os.environ.get("ICEWATER_SECRET_KEY") or secrets.token_urlsafe(40),
            ICEWATER_DEBUG="0",
            DJANGO_SETTINGS_MODULE="config.settings",
        )
        import django

        django.setup()
        from django.core.management import call_command
        from django.db import connection, transaction

        call_command("migrate", verbosity=0)
        t = time.perf_counter()
        with transaction.atomic():
            big = populate(args.outputs, "bench-large", id_base=1, seed=1)
            small = populate(500, "bench-small", id_base=10 * args.outputs, seed=2)
        with connection.cursor() as cursor:
            cursor.execute("ANALYZE")
        big, small = {**big, **resolve(big)}, {**small, **resolve(small)}
        print(
            f"populated {args.outputs:,} outputs x {len(CRITERIA)} criteria: {big['labels']:,} labels, "
            f"{big['gold']:,} adjudicated gold labels, {args.outputs * len(CRITERIA):,} verdicts "
            f"in {time.perf_counter() - t:.1f}s"
        )

        floor(big)  # warm the caches the same way for both
        report(big)
        floors, reports = [], []
        for _ in range(args.repeat):
            floors.append(floor(big)[0])
            seconds, queries, result = report(big)
            reports.append(seconds)
        floor_s, report_s = min(floors), min(reports)
        _, rows = floor(big)
        _, small_queries, _ = report(small)
        kappas = ", ".join(f"{r.judge.kappa:.3f}" for r in result.rows[:3])
        print(f"report (all {len(CRITERIA)} criteria, with intervals): {report_s:6.2f} s   (best of {args.repeat})")
        print(f"floor (same {rows:,} rows into DataFrames):  {floor_s:6.2f} s   (best of {args.repeat})")
        print(f"ratio report / floor:                        {report_s / floor_s:6.2f}x  (goal: within 2x)")
        print(f"queries: {queries} for {args.outputs:,} outputs, {small_queries} for 500 outputs (constant)")
        print(f"sanity: kappa of the first criteria {kappas}; human kappa {result.rows[0].human.kappa:.3f}")
        pages(big, args.repeat)
        connection.close()
    finally:
        signal.alarm(0)
        drop_database(admin, scratch)
        shutil.rmtree(workdir, ignore_errors=True)


if __name__ == "__main__":
    main()
