"""Figures cached under a digest of the data they are computed from, in Django's cache (the report's, and an
audit plan's decision and forecast).

The report's rows are a pure, deterministic function of the frames `data.py` loads (the bootstrap is seeded),
so rows computed from frames with the same content are the same rows. Keying the cache by that content can
therefore never serve a stale figure, whatever changed in the database and however it changed: a new label,
gold decision or verdict changes the frames, and with them the key. Loading the frames still happens on every
view (tens of milliseconds); the intervals, the human ceiling and the gold rule (hundreds) run once per content.

The source of the modules that compute the figures is part of the key too, so that a changed formula is never
answered from an entry an older version of the code wrote (the file cache outlives restarts).

Workspaces (issue 36): one cache serves every workspace, and that is safe because a key is the digest of every
input its figures are computed from, never a name. Frames carry output and criterion ids, which are global, so
two workspaces' frames never share a key even when everything in them is named alike; and where a key holds
values only (an audit's gold and verdict lists), the entry is a pure function of those values: the figures one
workspace would compute from them itself, nothing of another's. A new call of `computed` must keep that rule:
key by ids or by every input, never by names alone (names are unique within a workspace, not across).
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable
from functools import cache
from pathlib import Path
from typing import TypeVar

import pandas as pd
from django.core.cache import caches

T = TypeVar("T")
ROOT = Path(__file__).resolve().parents[2]
# Every module whose code decides a cached figure (a formula, a rule, a threshold, a word in a warning): the
# statistics and the report whole, so a module split off either is never left out.
SOURCES = (
    "calibration/report",
    "calibration/stats",
    "calibration/data/frame_reading.py",
    "labeling/gold.py",
    "judging/current_verdicts.py",
    "judging/sample_majority.py",
    "judging/probes",
)
TIMEOUT = 7 * 24 * 3600  # entries for data that moved on are never read again; let them expire


@cache
def code_digest() -> bytes:
    h = hashlib.blake2b(digest_size=16)
    for name in SOURCES:
        path = ROOT / name
        for file in sorted(path.rglob("*.py")) if path.is_dir() else [path]:
            h.update(file.relative_to(ROOT).as_posix().encode())
            h.update(file.read_bytes())
    return h.digest()


def digest(*parts: object) -> str:
    """A digest of frames (columns, types and every value, in order) and of plain values (by their repr: pass
    sorted lists, not sets, so equal contents give equal digests)."""
    h = hashlib.blake2b(code_digest(), digest_size=20)
    for part in parts:
        if isinstance(part, pd.DataFrame):
            h.update(repr([(str(c), str(t)) for c, t in part.dtypes.items()]).encode())
            h.update(pd.util.hash_pandas_object(part, index=False).to_numpy().tobytes())
        else:
            h.update(repr(part).encode())
        h.update(b"\x00")  # a separator, so that two parts never read as one
    return h.hexdigest()


def computed(kind: str, parts: tuple, compute: Callable[[], T]) -> T:
    """`compute()`'s value for these inputs, from the cache when the same inputs were seen before."""
    store = caches["default"]
    key = f"icewater:{kind}:{digest(*parts)}"
    value = store.get(key)
    if value is None:
        value = compute()
        store.set(key, value, TIMEOUT)
    return value
