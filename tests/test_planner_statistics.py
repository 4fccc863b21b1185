"""ANALYZE after a large import (formats.planner): the row counts and the columns plans use, not the transcripts."""

from __future__ import annotations

import pytest
from django.db import connection

from evals.models import Case, EvalSet, Output
from formats.planner import analyze, planned_columns

pytestmark = pytest.mark.django_db


def table_rows(model) -> float:
    with connection.cursor() as cursor:
        cursor.execute("SELECT reltuples FROM pg_class WHERE relname = %s", [model._meta.db_table])
        return cursor.fetchone()[0]


def analyzed_columns(model) -> set[str]:
    with connection.cursor() as cursor:
        cursor.execute("SELECT attname FROM pg_stats WHERE tablename = %s", [model._meta.db_table])
        return {row[0] for row in cursor.fetchall()}


def test_the_row_counts_and_the_planned_columns_are_analyzed_but_not_the_text():
    eval_set = EvalSet.objects.create(name="planner")
    cases = Case.objects.bulk_create(Case(eval_set=eval_set, case_id=f"c{i}", input="Q " * 50) for i in range(120))
    Output.objects.bulk_create(
        Output(case=case, agent_version=version, response="A " * 50, tool_calls=[{"name": "t"}])
        for case in cases
        for version in ("v1", "v2")
    )
    # Negative control: before ANALYZE the planner has neither (-1: never analyzed; 0 on older servers).
    assert table_rows(Output) <= 0 and "agent_version" not in analyzed_columns(Output)

    analyze(Case, Output)

    assert table_rows(Case) == 120 and table_rows(Output) == 240
    assert {"case_id", "eval_set_id"} <= analyzed_columns(Case)
    assert {"case_id", "agent_version", "latency_ms"} <= analyzed_columns(Output)
    assert not analyzed_columns(Output) & {"response", "tool_calls", "metadata"}
    assert not analyzed_columns(Case) & {"input", "reference", "metadata"}


def test_planned_columns_leave_out_free_text_and_json_only():
    assert planned_columns(Output) == ["id", "case_id", "agent_version", "latency_ms"]
    assert planned_columns(Case) == ["id", "eval_set_id", "case_id"]
