"""The one place where the ORM meets pandas: tidy DataFrames of labels, gold and verdicts.

Each loader runs one query, whatever the number of outputs or criteria, so pages and commands
built on them run a constant number of queries. Rows go from the database cursor straight into
a DataFrame (the querysets compile the SQL; Django's per-row model machinery is skipped), since
a calibration set can hold hundreds of thousands of labels.
"""

from __future__ import annotations

from dataclasses import dataclass

import pandas as pd
from django.db import connections
from django.db.models import QuerySet

from judging.models import JudgeConfig, Verdict
from labeling.models import Annotation, Criterion, EvalSet, GoldLabel, Label, Output, RubricVersion

LABEL_COLUMNS = ["output", "criterion", "annotation", "slot", "outcome"]
GOLD_COLUMNS = ["output", "criterion", "outcome"]
VERDICT_COLUMNS = ["output", "criterion", "run", "sample", "outcome", "evidence_found"]


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


def criteria_of(rubric_version: RubricVersion) -> list[Criterion]:
    return list(Criterion.objects.filter(rubric_version=rubric_version).order_by("order", "id"))


def load_labels(scope: Scope) -> pd.DataFrame:
    """Current labels of submitted annotations: output, criterion, annotation, slot, outcome."""
    qs = Label.objects.filter(
        is_current=True,
        annotation__status=Annotation.Status.SUBMITTED,
        annotation__rubric_version=scope.rubric_version,
        annotation__output__case__eval_set=scope.eval_set,
    )
    if scope.agent_version is not None:
        qs = qs.filter(annotation__output__agent_version=scope.agent_version)
    fields = ["annotation__output_id", "criterion_id", "annotation_id", "annotation__slot", "outcome"]
    return frame(qs, fields, LABEL_COLUMNS)


def load_adjudicated(scope: Scope) -> pd.DataFrame:
    """Current adjudicated gold labels: output, criterion, outcome."""
    qs = GoldLabel.objects.filter(
        is_current=True, rubric_version=scope.rubric_version, output__case__eval_set=scope.eval_set
    )
    if scope.agent_version is not None:
        qs = qs.filter(output__agent_version=scope.agent_version)
    return frame(qs, ["output_id", "criterion_id", "outcome"], GOLD_COLUMNS)


def load_verdicts(scope: Scope, judge_config: JudgeConfig) -> pd.DataFrame:
    """Every stored verdict sample of this judge config: output, criterion, sample, outcome,
    evidence_found, run_rank. Runs are numbered in creation order, so the newest run has the lowest
    `run_rank` (its negated id); readers take each sample from the most recent run that has it, the
    same rule judging/reading.py applies.
    """
    # A probe run's verdicts (probe != "") judged changed transcripts: they never count here.
    qs = Verdict.objects.filter(
        output__case__eval_set=scope.eval_set,
        rubric_version=scope.rubric_version,
        judge_config=judge_config,
        probe="",
    )
    if scope.agent_version is not None:
        qs = qs.filter(output__agent_version=scope.agent_version)
    fields = ["output_id", "criterion_id", "run_id", "sample", "outcome", "evidence_found"]
    verdicts = frame(qs, fields, VERDICT_COLUMNS)
    return verdicts.assign(run_rank=-verdicts["run"].astype("int64")).drop(columns="run")


def load_agent_versions(scope: Scope) -> pd.DataFrame:
    """output, agent_version for every output of the eval set (to split a report by agent version)."""
    qs = Output.objects.filter(case__eval_set=scope.eval_set)
    if scope.agent_version is not None:
        qs = qs.filter(agent_version=scope.agent_version)
    return frame(qs.order_by(), ["id", "agent_version"], ["output", "agent_version"])
