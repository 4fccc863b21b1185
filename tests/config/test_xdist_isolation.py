"""`make test-fast` runs in parallel: each pytest-xdist worker gets its own data folder, queue and database."""

from __future__ import annotations

import os
from pathlib import Path

from django.conf import settings
from django.db import connection

from tests.xdist_isolation import isolate


def test_a_worker_suffixes_the_runs_data_folder_and_queue():
    environ = {"ICEWATER_DATA_DIR": "/tmp/icewater-test-data.abc", "ICEWATER_CELERY_QUEUE": "icewater-test-42"}
    isolate(environ, "gw1")
    assert environ["ICEWATER_DATA_DIR"] == "/tmp/icewater-test-data.abc/gw1"
    assert environ["ICEWATER_CELERY_QUEUE"] == "icewater-test-42-gw1"


def test_a_worker_without_a_run_folder_gets_a_fresh_one_and_the_default_queue_suffixed():
    environ: dict[str, str] = {}
    isolate(environ, "gw0")
    folder = Path(environ["ICEWATER_DATA_DIR"])
    assert folder.is_dir() and folder.name.startswith("icewater-test-data-gw0-") and not any(folder.iterdir())
    folder.rmdir()
    assert environ["ICEWATER_CELERY_QUEUE"] == "icewater-gw0"


def test_the_settings_of_this_process_carry_its_workers_name_and_only_then(db):
    # Serially (make test) nothing is suffixed; under make test-fast every name carries the worker's: either way
    # this checks the running process, so the fast lane proves its own isolation.
    worker = os.environ.get("PYTEST_XDIST_WORKER", "")
    names = [str(settings.DATA_DIR), settings.CELERY_TASK_DEFAULT_QUEUE, connection.settings_dict["NAME"]]
    if worker:
        assert all(name.endswith(worker) for name in names), names
    else:
        assert not any(name.endswith(("gw0", "gw1")) for name in names), names
