"""Helpers for the import/export tests: in-memory files, row counts, and order-free dumps of what was imported."""

from __future__ import annotations

import io
import json
from pathlib import Path

from evals.models import Case, Criterion, EvalSet, Output, Rubric, RubricVersion, User
from formats.readers import Source
from labeling.models import Annotation, GoldLabel, Label

DATA = Path(__file__).parent / "data"
MODELS = (Rubric, RubricVersion, Criterion, EvalSet, Case, Output, Annotation, Label, GoldLabel, User)


def source(name: str, content: str | bytes) -> Source:
    """An import file held in memory, as an upload would be."""
    data = content.encode("utf-8") if isinstance(content, str) else content
    return Source(name=name, stream=io.BytesIO(data))


def data_source(name: str) -> Source:
    return source(name, (DATA / name).read_bytes())


def jsonl(*records: dict) -> str:
    return "".join(json.dumps(r) + "\n" for r in records)


def row_counts() -> dict[str, int]:
    return {model.__name__: model.objects.count() for model in MODELS}


def _canon(value) -> str:
    return json.dumps(value, sort_keys=True)


def dump_cases(eval_set_name: str) -> list[tuple]:
    """Everything an eval set holds, without database ids."""
    rows = []
    for case in Case.objects.filter(eval_set__name=eval_set_name).prefetch_related("outputs"):
        outputs = sorted(
            (o.agent_version, o.response, _canon(o.tool_calls), o.latency_ms, _canon(o.metadata))
            for o in case.outputs.all()
        )
        rows.append((case.case_id, case.input, case.reference, _canon(case.metadata), tuple(outputs)))
    return sorted(rows)


def dump_labels(eval_set_name: str) -> list[tuple]:
    rows = Label.objects.filter(annotation__output__case__eval_set__name=eval_set_name).values_list(
        "annotation__output__case__case_id",
        "annotation__output__agent_version",
        "annotation__annotator__username",
        "annotation__slot",
        "annotation__status",
        "annotation__source",
        "criterion__key",
        "outcome",
        "evidence",
        "revision",
        "is_current",
    )
    return sorted(rows)


def dump_gold(eval_set_name: str) -> list[tuple]:
    rows = GoldLabel.objects.filter(output__case__eval_set__name=eval_set_name).values_list(
        "output__case__case_id",
        "output__agent_version",
        "criterion__key",
        "outcome",
        "decided_by__username",
        "rationale",
        "source",
        "revision",
        "is_current",
    )
    return sorted(rows)
