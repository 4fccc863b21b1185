"""The embedded default (SQLite) locked by another writer: the receiver answers 503 with Retry-After and writes
nothing; the finisher, as a command, says so and keeps the spans; as a worker's task, it schedules itself again.
In a subprocess on its own SQLite file (tests/otel_sqlite_locked.py), since this suite's database is PostgreSQL."""

from __future__ import annotations

import json
import os
import subprocess
import sys

from tests.services import ROOT


def test_a_locked_sqlite_database_loses_no_span_and_every_path_says_so_or_tries_again(tmp_path):
    env = {
        key: value
        for key, value in os.environ.items()
        if key not in ("DATABASE_URL", "CELERY_BROKER_URL", "ICEWATER_TEST_DB_NAME")
    }
    env.update(
        ICEWATER_DATA_DIR=str(tmp_path),
        DATABASE_URL=f"sqlite:///{tmp_path}/db.sqlite3?timeout=1",
        ICEWATER_SECRET_KEY="test-only",
    )
    result = subprocess.run(
        [sys.executable, "-m", "tests.otel_sqlite_locked"],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert result.returncode == 0, result.stderr[-3000:]
    report = json.loads(result.stdout.splitlines()[-1])

    assert report["locked_export"] == [503, "5", "the database cannot take spans right now; retry"]
    assert report["spans_after_locked_export"] == 0  # nothing half-written
    assert (report["free_export"], report["spans_after_free_export"]) == (200, 4)
    assert report["command_error"].startswith("sqlite-traces: the database cannot take the write now (database is")
    assert report["command_error"].endswith("the spans not yet finished are kept: run finish_traces again")
    assert report["outputs_while_locked"] == 0 and report["spans_while_locked"] == 4
    assert report["task_messages_queued"] == 1  # the task put itself back on the (file system) broker
    assert (report["outputs_once_free"], report["spans_once_free"]) == (1, 0)
