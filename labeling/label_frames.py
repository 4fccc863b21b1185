"""Labels and adjudicated gold as tidy DataFrames: where the ORM meets pandas for the human side.

Each loader runs one query, whatever the number of outputs or criteria, so pages and commands
built on them run a constant number of queries. Rows go from the database cursor straight into
a DataFrame (the querysets compile the SQL; Django's per-row model machinery is skipped), since
a calibration set can hold hundreds of thousands of labels. calibration/data/frames.py adds the judge's
verdicts with the same `frame` and `Scope`.
"""

from __future__ import annotations

from dataclasses import dataclass

import pandas as pd
from django.db import connections
from django.db.models import QuerySet

from evals.models import EvalSet, RubricVersion

from .models import GoldLabel, Label

LABEL_COLUMNS = ["output", "criterion", "annotation", "annotator", "slot", "outcome", "quotes_outside_response"]
GOLD_COLUMNS = ["output", "criterion", "outcome"]


def frame(qs: QuerySet, fields: list[str], columns: list[str]) -> pd.DataFrame:
    """Run `qs.values_list(*fields)` as one query and return its rows as a DataFrame."""
    query = qs.values_list(*fields).query
    sql, params = query.get_compiler(using=qs.db).as_sql()
    with connections[qs.db].cursor() as cursor:
        cursor.execute(sql, params)
        rows = cursor.fetchall()
    return pd.DataFrame.from_records(rows, columns=columns, coerce_float=False)


@dataclass(frozen=True)
class Scope:
    """What a report or gate reads: one eval set, one rubric version, optionally one agent version."""

    eval_set: EvalSet
    rubric_version: RubricVersion
    agent_version: str | None = None


def load_labels(scope: Scope) -> pd.DataFrame:
    """Current labels of submitted annotations: output, criterion, annotation, annotator, slot, outcome, and
    how many of the label's quotes are only outside the response (Label.quotes_outside_response)."""
    qs = Label.objects.submitted().filter(
        annotation__rubric_version=scope.rubric_version,
        annotation__output__case__eval_set=scope.eval_set,
    )
    if scope.agent_version is not None:
        qs = qs.filter(annotation__output__agent_version=scope.agent_version)
    fields = [
        "annotation__output_id",
        "criterion_id",
        "annotation_id",
        "annotation__annotator_id",
        "annotation__slot",
        "outcome",
        "quotes_outside_response",
    ]
    return frame(qs, fields, LABEL_COLUMNS)


def load_adjudicated(scope: Scope, *, with_decider: bool = False) -> pd.DataFrame:
    """Current adjudicated gold labels: output, criterion, outcome (and decided_by, the reviewer's user id,
    `with_decider`: an annotator's agreement with gold leaves out the items they decided themselves)."""
    qs = GoldLabel.objects.current().filter(rubric_version=scope.rubric_version, output__case__eval_set=scope.eval_set)
    if scope.agent_version is not None:
        qs = qs.filter(output__agent_version=scope.agent_version)
    if with_decider:
        return frame(qs, ["output_id", "criterion_id", "outcome", "decided_by_id"], [*GOLD_COLUMNS, "decided_by"])
    return frame(qs, ["output_id", "criterion_id", "outcome"], GOLD_COLUMNS)
