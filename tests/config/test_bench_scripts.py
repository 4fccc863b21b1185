"""Every benchmark under bench/ starts: its imports resolve and its options parse (`--help`), so a module that
moves cannot leave a bench behind (mypy and the tests do not import bench/)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
# Modules the benches import (each started through them, so its imports are checked there), not benches to run.
HELPERS = {"scratch_database.py", "audit_common.py"}
SCRIPTS = sorted(p for p in (ROOT / "bench").glob("*.py") if p.name not in HELPERS)

pytestmark = pytest.mark.subprocess


def starts(script: Path) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, str(script), "--help"], cwd=ROOT, capture_output=True, text=True, timeout=120, check=False
    )


@pytest.mark.parametrize("script", SCRIPTS, ids=lambda p: p.name)
def test_the_bench_starts(script):
    done = starts(script)
    assert done.returncode == 0, done.stderr[-2000:]


def test_a_bench_whose_import_moved_does_not_start(tmp_path):
    # Negative control: the import the audit bench once had after the forecast left audit_stats.py.
    script = tmp_path / "moved.py"
    script.write_text(
        f"import sys\nsys.path.insert(0, {str(ROOT)!r})\n"
        "import django, os\nos.environ.setdefault('DJANGO_SETTINGS_MODULE', 'config.settings')\n"
        "from calibration.stats.audit_stats import labels_per_decision\n"
    )
    done = starts(script)
    assert done.returncode != 0 and "labels_per_decision" in done.stderr
