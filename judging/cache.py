"""The verdict cache: an earlier answer to exactly the same question is reused instead of asking again.

The key is the hash of the rubric version's content hash, the judge config's content
hash (model id, temperature, template, ... included), the hash of the exact request
(prompt and schema) and the sample number. Change the judge or the rubric and the key
changes: an old entry can never be hit. Only answers the judge actually gave are reused
(an unusable answer or a refusal included); timeouts, 429s and 5xx are asked again.
"""

from __future__ import annotations

import hashlib

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

    A key is left out unless that run answered every wanted criterion. One query for all keys.
    """
    if not wanted:
        return {}
    rows = (
        Verdict.objects.filter(cache_key__in=list(wanted), error_kind__in=CACHEABLE_ERROR_KINDS)
        .exclude(run_id=exclude_run)
        .order_by("cache_key", "-run_id")
        .values_list("cache_key", "run_id", "criterion__key", *CACHED_FIELDS)
    )
    latest: dict[str, tuple[int, dict[str, dict]]] = {}
    for key, run_id, criterion, *values in rows:
        run_seen, answers = latest.setdefault(key, (run_id, {}))
        if run_id == run_seen:
            answers[criterion] = dict(zip(CACHED_FIELDS, values, strict=True))
    return {key: answers for key, (_, answers) in latest.items() if set(wanted[key]) <= set(answers)}
