"""The verdict cache: an earlier answer to exactly the same question is reused instead of asking again.

The key is the hash of the rubric version's content hash, the judge config's content
hash (model id, temperature, template, ... included), the hash of the exact request
(prompt and schema) and the sample number. Change the judge or the rubric and the key
changes: an old entry can never be hit. Only answers the judge actually gave are reused
(an unusable answer or a refusal included); timeouts, 429s and 5xx are asked again.
"""

from __future__ import annotations

import hashlib

from django.db import connection

from .models import CACHEABLE_ERROR_KINDS, Verdict

CACHED_FIELDS = (
    "outcome",
    "evidence",
    "error_kind",
    "error_reason",
    "raw_output",
    "latency_ms",
    "tokens_in",
    "tokens_out",
)


def cache_key(*, rubric_hash: str, config_hash: str, request_hash: str, sample: int) -> str:
    return hashlib.sha256(f"{rubric_hash}:{config_hash}:{request_hash}:{sample}".encode()).hexdigest()


def lookup(wanted: dict[str, list[str]], *, exclude_run: int) -> dict[str, dict[str, dict]]:
    """For each cache key -> criterion keys wanted, the most recent earlier run's answers by criterion key.

    A key is left out unless that run answered every wanted criterion. One query for all keys, written
    as SQL: a lane looks up every batch it claims, and building the equivalent queryset took more CPU
    than the rest of preparing the batch (measured with py-spy).
    """
    if not wanted:
        return {}
    keys = list(wanted)
    columns = ", ".join(f"v.{name}" for name in CACHED_FIELDS)
    sql = (
        f"SELECT v.cache_key, v.run_id, c.{_criterion_key_column()}, {columns} "  # noqa: S608 - names from the models, values bound
        f"FROM {Verdict._meta.db_table} v JOIN {_criterion_table()} c ON c.id = v.criterion_id "
        f"WHERE v.cache_key IN ({', '.join(['%s'] * len(keys))}) "
        f"AND v.error_kind IN ({', '.join(['%s'] * len(CACHEABLE_ERROR_KINDS))}) AND v.run_id <> %s "
        "ORDER BY v.cache_key, v.run_id DESC"
    )
    with connection.cursor() as cursor:
        cursor.execute(sql, [*keys, *CACHEABLE_ERROR_KINDS, exclude_run])
        rows = cursor.fetchall()
    latest: dict[str, tuple[int, dict[str, dict]]] = {}
    for key, run_id, criterion, *values in rows:
        run_seen, answers = latest.setdefault(key, (run_id, {}))
        if run_id == run_seen:
            answers[criterion] = dict(zip(CACHED_FIELDS, values, strict=True))
    return {key: answers for key, (_, answers) in latest.items() if set(wanted[key]) <= set(answers)}


def _criterion_table() -> str:
    return Verdict._meta.get_field("criterion").related_model._meta.db_table


def _criterion_key_column() -> str:
    return Verdict._meta.get_field("criterion").related_model._meta.get_field("key").column
