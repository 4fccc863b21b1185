"""Each pytest-xdist worker its own data folder and Celery queue, as each run of scripts/test.sh has its own.

Loaded with `-p tests.xdist_isolation` (`make test-fast` does it): a plugin is imported before
pytest-django reads config.settings, and a worker already knows its name (PYTEST_XDIST_WORKER, e.g.
"gw0") then, so the settings see the suffixed names. pytest-django suffixes the test database itself
(test_icewater_123 -> test_icewater_123_gw0). Without this, workers of one run would share:
- the data folder: its file cache holds the failed-token counts every test clears (tests/conftest.py),
  so one worker's clear would reset another's count mid-test;
- the Celery queue, which also prefixes the Redis progress cache: two workers' databases number their
  import jobs alike, so their progress keys would collide.
Outside xdist (and in xdist's controller, which runs no tests) it changes nothing.
"""

from __future__ import annotations

import os
import tempfile
from collections.abc import MutableMapping
from pathlib import Path

WORKER = os.environ.get("PYTEST_XDIST_WORKER", "")


def isolate(environ: MutableMapping[str, str], worker: str) -> None:
    """Suffix the run's data folder and queue with the worker's name (both have defaults if unset)."""
    data_dir = environ.get("ICEWATER_DATA_DIR", "")
    if data_dir:
        environ["ICEWATER_DATA_DIR"] = str(Path(data_dir) / worker)
    else:
        environ["ICEWATER_DATA_DIR"] = tempfile.mkdtemp(prefix=f"icewater-test-data-{worker}-")
    environ["ICEWATER_CELERY_QUEUE"] = f"{environ.get('ICEWATER_CELERY_QUEUE', 'icewater')}-{worker}"


if WORKER:
    isolate(os.environ, WORKER)
