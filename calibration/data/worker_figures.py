"""What every kind of figures a Celery worker computes and stores shares (issue 37): an audit plan's
(audits/stored_figures.py) and a calibration report's (report/stored_report.py). One computation per stored row at a
time, the latest change winning, and freshness said in the same words everywhere.

A row counts `wanted` (changes seen, bumped after each commit that touched its data) and `done` (the `wanted` its
last computation started from): it is behind while done < wanted. One computation per row at a time: a lock on (the
kind's own space, the row's id), tried without waiting (computation_lock.py: a PostgreSQL session advisory lock, a
file lock on the embedded SQLite install). Not a row lock with
select_for_update(skip_locked): that needs a transaction open for the whole computation (seconds), and the trigger's
bump of `wanted` would wait behind it, holding the annotator's save. Not a Redis lock with an expiry either: too short
an expiry lets two computations run at once, too long a one keeps a killed worker's lock. Both forms of the lock are
let go when their holder dies, so a killed worker leaves nothing held.

A burst of changes gives a few computations, not one each: a task that finds the lock held returns at once, and the
holder, after each computation, reads `wanted` again and computes again if it moved (the latest state wins); after it
lets the lock go it looks once more, so a change whose own task met the lock while the holder was finishing is not
lost. Each kind writes its figures, state and times with one UPDATE, so a worker killed mid-computation leaves the
previous figures whole.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime

from django.utils import timezone

from calibration.data.computation_lock import try_lock


def coalesced(space: int, row_id: int, is_current: Callable[[], bool], compute: Callable[[], None]) -> int:
    """The worker's part: compute until the row is of the latest change seen, unless another computation of the row
    is under way (it will see the change). Returns how many computations this call ran."""
    runs = 0
    while True:
        with try_lock(space, row_id) as got:
            if not got:
                return runs
            while not is_current():
                compute()
                runs += 1
        # Let go; a change whose task met our lock after our last look is ours to see now.
        if is_current():
            return runs


def fresh_words(computed_at: datetime | None, of: str, *, current: bool, now: datetime | None = None) -> str:
    """How fresh stored figures are, said alike for a plan and an audit group: "as of <of>, 4 s ago; updating…"."""
    if computed_at is None:
        return "not computed yet; a worker is computing them…"
    said = f"as of {of}, {ago(computed_at, now)}"
    return said if current else f"{said}; updating…"


def freshness_dict(
    *, current: bool, as_of: int, seen: int, computed_at: datetime | None, duration_s: float | None, words: str, **extra
) -> dict:
    """Stored figures' freshness as the API and the commands' JSON answer it, alike for every kind."""
    return {
        "current": current,
        "as_of_change": as_of,
        "changes_seen": seen,
        **extra,
        "computed_at": computed_at.isoformat() if computed_at else None,
        "duration_s": duration_s,
        "words": words,
    }


def ago(computed_at: datetime, now: datetime | None = None) -> str:
    """ "4 s ago", "3 min ago": how old stored figures are, said alike on every page."""
    age = max(0, int(((now or timezone.now()) - computed_at).total_seconds()))
    return f"{age} s ago" if age < 120 else f"{age // 60} min ago"
