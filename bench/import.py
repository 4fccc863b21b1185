"""Import speed on PostgreSQL, as a ratio to a raw COPY of the same rows measured in the same run.

    python bench/import.py                # 100,000 cases x 2 agent versions = 200,000 outputs
    python bench/import.py --cases 20000  # a quicker run

Uses the PostgreSQL of `scripts/services.sh env` (or DATABASE_URL): creates a
scratch database, migrates it, generates a JSONL file of realistic outputs
(inputs and responses of 300-800 characters, tool calls with arguments and
results), imports it through the real importer (`formats.import_cases`,
the COPY fast path), and times a raw COPY of the same rows into a bare table
with the same column types and no index or constraint: the floor. The floor is
measured before and after the import and the faster one is used. The scratch
database is dropped at the end. The whole run is bounded by --timeout.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import secrets
import shutil
import signal
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from scratch_database import create_database, database_url, drop_database  # noqa: E402 - after the path is set

WORDS = (
    "refund order charge charged twice duplicate customer policy business days amount account card bank "
    "transfer please thank you we will process your request within the original payment method receipt "
    "parcel carrier delivery lost damaged return window label store credit voucher escalate agent ticket "
    "confirm confirmed issued pending review sorry for the trouble apologies number reference tracking"
).split()
TOOLS = ("lookup_order", "issue_refund", "get_policy", "track_parcel", "create_ticket")


def text(rng: random.Random, low: int, high: int) -> str:
    target = rng.randint(low, high)
    words: list[str] = []
    size = 0
    while size < target:
        word = rng.choice(WORDS)
        words.append(word)
        size += len(word) + 1
    return " ".join(words).capitalize() + "."


def tool_calls(rng: random.Random, i: int) -> list[dict]:
    calls = []
    for _ in range(rng.choice((0, 1, 1, 2, 2, 3))):
        name = rng.choice(TOOLS)
        calls.append(
            {
                "name": name,
                "args": {"order_id": f"{i:07d}", "reason": text(rng, 20, 60)},
                "response": {
                    "status": rng.choice(("ok", "pending", "denied")),
                    "amount": round(rng.uniform(5, 500), 2),
                    "note": text(rng, 40, 160),
                },
            }
        )
    return calls


def generate(path: Path, cases: int, versions: int, seed: int = 7) -> int:
    rng = random.Random(seed)
    with path.open("w", encoding="utf-8") as out:
        for i in range(cases):
            case = {
                "case_id": f"case-{i:07d}",
                "input": text(rng, 300, 800),
                "reference": text(rng, 100, 300),
                "metadata": {
                    "category": rng.choice(("duplicate", "lost", "policy", "damaged")),
                    "priority": rng.randint(1, 3),
                },
            }
            for v in range(versions):
                record = {
                    **case,
                    "agent_version": f"v{v + 1}",
                    "response": text(rng, 300, 800),
                    "tool_calls": tool_calls(rng, i),
                    "latency_ms": rng.randint(200, 9000),
                }
                out.write(json.dumps(record) + "\n")
    return cases * versions


FLOOR_TABLE = """CREATE TABLE bench_floor (case_id text, agent_version text, input text, reference text, response text,
                 tool_calls jsonb, latency_ms integer, metadata jsonb)"""


def floor_rows(path: Path) -> list[tuple]:
    rows = []
    with path.open(encoding="utf-8") as f:
        for line in f:
            r = json.loads(line)
            rows.append(
                (
                    r["case_id"],
                    r["agent_version"],
                    r["input"],
                    r["reference"],
                    r["response"],
                    json.dumps(r["tool_calls"]),
                    r["latency_ms"],
                    json.dumps(r["metadata"]),
                )
            )
    return rows


def time_floor(conn, rows: list[tuple]) -> float:
    """Seconds to COPY the rows into a fresh bare table and commit."""
    with conn.cursor() as cur:
        cur.execute("DROP TABLE IF EXISTS bench_floor")
        cur.execute(FLOOR_TABLE)
    conn.commit()
    start = time.perf_counter()
    with (
        conn.cursor() as cur,
        cur.copy(
            "COPY bench_floor (case_id, agent_version, input, reference, response, tool_calls, latency_ms, metadata)"
            " FROM STDIN"
        ) as copy,
    ):
        for row in rows:
            copy.write_row(row)
    conn.commit()
    elapsed = time.perf_counter() - start
    with conn.cursor() as cur:
        cur.execute("DROP TABLE bench_floor")
    conn.commit()
    return elapsed


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--cases", type=int, default=100_000)
    parser.add_argument("--versions", type=int, default=2)
    parser.add_argument(
        "--bulk-sample",
        type=int,
        default=20_000,
        help="also time the portable bulk_create path on this many outputs (0: skip)",
    )
    parser.add_argument("--timeout", type=int, default=900, help="give up after this many seconds")
    args = parser.parse_args()
    signal.signal(signal.SIGALRM, lambda *_: (_ for _ in ()).throw(TimeoutError(f"bench exceeded {args.timeout}s")))
    signal.alarm(args.timeout)

    import psycopg

    base_url = database_url()
    scratch = f"icewater_bench_{os.getpid()}"
    admin = create_database(base_url, scratch)
    scratch_url = base_url.rsplit("/", 1)[0] + "/" + scratch
    workdir = Path(tempfile.mkdtemp(prefix="icewater-bench-"))
    try:
        os.environ.update(
            DATABASE_URL=scratch_url,
            ICEWATER_DATA_DIR=str(workdir),
            ICEWATER_SECRET_KEY=os.environ.get("ICEWATER_SECRET_KEY") or secrets.token_urlsafe(40),
            DJANGO_SETTINGS_MODULE="config.settings",
        )
        import django

        django.setup()
        from django.core.management import call_command
        from django.db import connection

        from evals.models import Workspace
        from formats.case_import import import_cases
        from formats.readers import open_source

        call_command("migrate", verbosity=0)
        workspace = Workspace.objects.create(slug="bench", name="Bench")  # the eval sets below are its
        path = workdir / "outputs.jsonl"
        t = time.perf_counter()
        n = generate(path, args.cases, args.versions)
        size_mb = path.stat().st_size / 1e6
        print(
            f"generated {n:,} outputs ({args.cases:,} cases x {args.versions} agent versions), "
            f"{size_mb:,.0f} MB JSONL in {time.perf_counter() - t:.1f}s"
        )

        floor_conn = psycopg.connect(scratch_url)
        # The rows are built before and freed after each floor measurement (not timed), so that the
        # import does not run beside half a gigabyte of someone else's objects.
        rows = floor_rows(path)
        floor_before = time_floor(floor_conn, rows)
        del rows

        start = time.perf_counter()
        with open_source(path) as source:
            report = import_cases(source=source, workspace=workspace, eval_set_name="bench", fast_path=True)
        import_s = time.perf_counter() - start
        assert report.counts["outputs_created"] == n, report.counts

        rows = floor_rows(path)
        floor_after = time_floor(floor_conn, rows)
        del rows
        floor = min(floor_before, floor_after)

        start = time.perf_counter()
        with open_source(path) as source:
            again = import_cases(source=source, workspace=workspace, eval_set_name="bench", fast_path=True)
        reimport_s = time.perf_counter() - start
        assert not again.changed

        print(f"import (COPY fast path):  {import_s:7.2f} s  {n / import_s:10,.0f} outputs/s")
        print(
            f"floor (raw COPY, bare):   {floor:7.2f} s  {n / floor:10,.0f} rows/s "
            f"(before import {floor_before:.2f} s, after {floor_after:.2f} s; the faster is the floor)"
        )
        print(f"ratio import / floor:     {import_s / floor:7.2f}x   (goal: within 3x)")
        print(f"re-import, no change:     {reimport_s:7.2f} s  {n / reimport_s:10,.0f} outputs/s checked")

        if args.bulk_sample:
            sample = workdir / "sample.jsonl"
            with path.open() as src, sample.open("w") as dst:
                for i, line in enumerate(src):
                    if i >= args.bulk_sample:
                        break
                    dst.write(line)
            for label, fast in (("COPY fast path", True), ("portable bulk_create", False)):
                start = time.perf_counter()
                with open_source(sample) as source:
                    import_cases(source=source, workspace=workspace, eval_set_name=f"sample-{fast}", fast_path=fast)
                s = time.perf_counter() - start
                print(
                    f"sample of {args.bulk_sample:,}, {label + ':':22s} {s:6.2f} s  "
                    f"{args.bulk_sample / s:10,.0f} outputs/s"
                )
        floor_conn.close()
        connection.close()
    finally:
        signal.alarm(0)
        drop_database(admin, scratch)
        shutil.rmtree(workdir, ignore_errors=True)


if __name__ == "__main__":
    main()
