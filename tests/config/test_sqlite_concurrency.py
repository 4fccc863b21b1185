"""A file SQLite database named by DATABASE_URL takes concurrent writers without "database is locked"."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

# Every test here starts another process.
pytestmark = pytest.mark.subprocess
ROOT = Path(__file__).resolve().parents[2]


def test_eight_writers_through_django_to_a_sqlite_database_url_meet_no_error(tmp_path):
    env = {k: v for k, v in os.environ.items() if not k.startswith(("ICEWATER_", "DATABASE_URL", "CELERY_"))}
    env.update(
        ICEWATER_DATA_DIR=str(tmp_path),
        DATABASE_URL=f"sqlite:///{tmp_path}/named.sqlite3",
        ICEWATER_SECRET_KEY="test-only",
    )
    result = subprocess.run(
        [sys.executable, "-m", "tests.sqlite_writers"], cwd=ROOT, env=env, capture_output=True, text=True, timeout=300
    )
    assert result.returncode == 0, result.stderr
    report = json.loads(result.stdout)
    assert report["errors"] == []
    assert report["rows"] == 200  # 8 writers x 25 transactions: every one committed
    assert report["journal_mode"] == "wal"
