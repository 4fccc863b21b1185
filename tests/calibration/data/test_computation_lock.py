"""The computation lock on the embedded install (SQLite has no advisory lock): a file lock held by one process at a
time, let go when its holder is killed; and an audit plan's figures computed by it on a real SQLite install
(the suite's own database is PostgreSQL, so that part runs in a subprocess on a SQLite file of its own)."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import textwrap
import time

import pytest

from calibration.data.computation_lock import file_lock
from tests.services import ROOT

HOLD = textwrap.dedent(
    """
    import sys, time
    from pathlib import Path
    from calibration.data.computation_lock import file_lock
    with file_lock(Path(sys.argv[1]), 37001, 5) as got:
        print("held" if got else "refused", flush=True)
        time.sleep(600)
    """
)


def test_one_holder_at_a_time_and_a_killed_holder_lets_go(tmp_path):
    with file_lock(tmp_path, 37001, 5) as first:
        assert first
        with file_lock(tmp_path, 37001, 5) as second:  # a second descriptor, even in this process, is refused
            assert not second
        with file_lock(tmp_path, 37001, 6) as other_key:  # another row's lock is its own
            assert other_key
    holder = subprocess.Popen([sys.executable, "-c", HOLD, str(tmp_path)], cwd=ROOT, stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "held"
        with file_lock(tmp_path, 37001, 5) as while_held:
            assert not while_held  # negative control: the other process holds it
        os.kill(holder.pid, signal.SIGKILL)
        holder.wait(timeout=30)
        deadline = time.monotonic() + 10
        while True:
            with file_lock(tmp_path, 37001, 5) as after_kill:
                if after_kill or time.monotonic() > deadline:
                    break
            time.sleep(0.1)
        assert after_kill  # the kernel let go with the process
    finally:
        holder.kill()
        holder.wait(timeout=30)


@pytest.mark.subprocess
def test_the_demo_audit_plan_gets_its_figures_on_the_embedded_sqlite_install(tmp_path):
    """The bug this guards: the figures task asked SQLite for pg_try_advisory_lock and failed, so `make run`'s audit
    plan said "a worker is computing them" for ever."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("ICEWATER_", "DATABASE_URL", "CELERY_"))}
    env.update(ICEWATER_DATA_DIR=str(tmp_path), ICEWATER_WORKSPACE="refund-support")

    def manage(*args: str) -> subprocess.CompletedProcess:
        return subprocess.run(
            [sys.executable, "manage.py", *args], cwd=ROOT, env=env, capture_output=True, text=True, timeout=300
        )

    assert manage("migrate", "--noinput").returncode == 0
    demo = manage("load_demo", "--audit")
    assert demo.returncode == 0, demo.stderr
    before = json.loads(manage("audit_plan", "show", "1", "--format", "json").stdout)
    assert "lower" not in before and before["freshness"]["current"] is False  # the command computes nothing
    computed = manage(
        "shell", "-c", "from calibration.audits.stored_figures import recompute; print('runs', recompute(1))"
    )
    assert computed.returncode == 0, computed.stderr
    assert "runs 1" in computed.stdout
    shown = json.loads(manage("audit_plan", "show", "1", "--format", "json").stdout)
    assert shown["freshness"]["current"] is True
    assert shown["n_labeled"] > 0 and shown["lower"] < shown["estimate"] < shown["upper"]
    assert (tmp_path / "computation-locks").is_dir()
