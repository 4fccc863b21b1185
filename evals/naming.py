"""Names for outputs that people can read, without revealing the agent version."""

from __future__ import annotations

from evals.models import Output


def output_names(output_ids) -> dict[int, str]:
    """How people tell outputs apart without seeing the agent version: "case-7", or "case-7 · answer 2"
    when the case has several outputs (one per agent version). One query for any number of outputs."""
    rows = (
        Output.objects.filter(case__outputs__pk__in=list(output_ids))
        .order_by("case_id", "pk")
        .values_list("pk", "case_id", "case__case_id")
        .distinct()
    )
    by_case: dict[int, list[tuple[int, str]]] = {}
    for pk, case_pk, case_id in rows:
        by_case.setdefault(case_pk, []).append((pk, case_id))
    names = {}
    for outputs in by_case.values():
        for i, (pk, case_id) in enumerate(outputs, start=1):
            names[pk] = output_name(case_id, i, len(outputs))
    return names


def output_name(case_id: str, number: int, of: int) -> str:
    return case_id if of <= 1 else f"{case_id} · answer {number}"
