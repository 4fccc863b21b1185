"""One computation of a stored figure at a time, across processes, released when its holder dies.

On PostgreSQL: a session advisory lock (`pg_try_advisory_lock`), tried without waiting. Postgres drops a session's
advisory locks when its connection ends, so a killed worker leaves nothing held. (Behind a transaction-pooling
PgBouncer a session lock is not safe: use session pooling.)

On SQLite (the embedded install: one machine, its workers beside the web process) there is no advisory lock, so
the same promise comes from an exclusive `flock` on a file of its own under ICEWATER_DATA_DIR: the kernel lets go of
it when the holding process exits or is killed, as Postgres does with the connection.
"""

from __future__ import annotations

import fcntl
import os
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from django.conf import settings
from django.db import connection


@contextmanager
def try_lock(space: int, key: int) -> Iterator[bool]:
    """Yields True while this process holds the lock (space, key), False at once if another holds it."""
    if connection.vendor == "postgresql":
        with _advisory(space, key) as got:
            yield got
    else:
        with file_lock(Path(settings.DATA_DIR) / "computation-locks", space, key) as got:
            yield got


@contextmanager
def _advisory(space: int, key: int) -> Iterator[bool]:
    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_try_advisory_lock(%s, %s)", [space, key])
        got = bool(cursor.fetchone()[0])
    try:
        yield got
    finally:
        if got:
            with connection.cursor() as cursor:
                cursor.execute("SELECT pg_advisory_unlock(%s, %s)", [space, key])


@contextmanager
def file_lock(directory: Path, space: int, key: int) -> Iterator[bool]:
    """The file-system form of the lock; the file stays (empty) after release, so a path never races its removal."""
    directory.mkdir(parents=True, exist_ok=True)
    fd = os.open(directory / f"{space}-{key}.lock", os.O_RDWR | os.O_CREAT, 0o600)
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            yield False
            return
        try:
            yield True
        finally:
            fcntl.flock(fd, fcntl.LOCK_UN)
    finally:
        os.close(fd)
