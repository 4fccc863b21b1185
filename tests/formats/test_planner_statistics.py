"""ANALYZE after a large import (formats.planner): the row counts and the columns plans use, not the transcripts."""

from __future__ import annotations

import pytest
from django.db import connection

from evals.models import Case, EvalSet, Output
from formats.planner import analyze, planned_columns
from tests.factories import default_workspace

pytestmark = pytest.mark.django_db


def table_rows(model) -> float:
    with connection.cursor() as cursor:
        cursor.execute("SELECT reltuples FROM pg_class WHERE relname = %s", [model._meta.db_table])
        return cursor.fetchone()[0]


def common_values(model, column: str) -> str:
    """The column's most common values as the planner last saw them ("" if it has no statistics). Another test
    may have analyzed the table before (statistics outlive its rows), so tests look for their own values."""
    with connection.cursor() as cursor:
        cursor.execute(
            "SELECT most_common_vals::text FROM pg_stats WHERE tablename = %s AND attname = %s",
            [model._meta.db_table, column],
        )
        row = cursor.fetchone()
        return (row and row[0]) or ""


def test_the_row_counts_and_the_planned_columns_are_analyzed_but_not_the_text():
    eval_set = EvalSet.objects.create(name="planner", workspace=default_workspace())
    cases = Case.objects.bulk_create(
        Case(eval_set=eval_set, case_id=f"c{i}", input="planner question") for i in range(120)
    )
    Output.objects.bulk_create(
        Output(case=case, agent_version=version, response="planner answer", tool_calls=[{"name": "t"}])
        for case in cases
        for version in ("planner-x", "planner-y")
    )
    # Negative control: before ANALYZE the planner knows none of these values.
    assert "planner-x" not in common_values(Output, "agent_version")

    analyze(Case, Output)

    assert table_rows(Case) == 120 and table_rows(Output) == 240
    assert "planner-x" in common_values(Output, "agent_version")
    # Every output has the same response and every case the same input: a whole-table ANALYZE would list them.
    assert "planner answer" not in common_values(Output, "response")
    assert "planner question" not in common_values(Case, "input")


def test_planned_columns_leave_out_free_text_and_json_only():
    assert planned_columns(Output) == ["id", "case_id", "agent_version", "latency_ms"]
    assert planned_columns(Case) == ["id", "eval_set_id", "case_id"]
