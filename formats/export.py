"""Exporting cases, labels and gold labels in the formats the importers read.

What is written imports back to the same data (import -> export -> import is
a no-op the second time), so the export is also how data moves between
installations.

Gold (`what="gold"`) is the effective gold per output and criterion: the
current adjudication where there is one (adjudicator = who decided), else the
strict majority of the annotators' current labels, written with the
adjudicator "agreement". Importing an "agreement" line checks it against the
labels and stores nothing, so it round-trips without turning derived gold
into adjudications.
"""

from __future__ import annotations

import csv
import json
from collections.abc import Iterator
from typing import IO, Any

from django.db.models import Prefetch

from evals.csv_cells import csv_safe
from evals.models import EvalSet, Output, RubricVersion, Workspace
from evals.validators import UnknownName
from labeling.models import GoldLabel, Label

from .case_records import CASE_FIELDS, OUTPUT_FIELDS
from .label_records import AGREEMENT

# Verdicts are judging's: formats.verdicts.export_data adds them to these (labeling imports no other app).
WHAT = ("cases", "labels", "gold")
FORMATS = ("jsonl", "csv", "adk")
CASE_COLUMNS = (
    "case_id",
    "agent_version",
    "input",
    "reference",
    "response",
    "tool_calls",
    "latency_ms",
    "metadata",
    "output_metadata",
)
LABEL_COLUMNS = ("case_id", "agent_version", "criterion", "annotator", "outcome", "evidence")
GOLD_COLUMNS = ("case_id", "agent_version", "criterion", "adjudicator", "outcome", "rationale")
assert set(CASE_COLUMNS) == set(CASE_FIELDS + OUTPUT_FIELDS)


class ExportError(ValueError):
    """The export cannot run as asked (unknown eval set, rubric, judge or format)."""


def _dumps(value) -> str:
    return json.dumps(value, ensure_ascii=False, sort_keys=True)


def case_records(eval_set: EvalSet) -> Iterator[dict]:
    """One record per output, and one without output fields for a case that has none."""
    outputs = Prefetch("outputs", queryset=Output.objects.order_by("agent_version"))
    for case in eval_set.cases.order_by("case_id").prefetch_related(outputs).iterator(chunk_size=1000):
        base = {"case_id": case.case_id, "input": case.input, "reference": case.reference, "metadata": case.metadata}
        if not case.outputs.all():
            yield base
        for output in case.outputs.all():
            yield {
                "case_id": case.case_id,
                "agent_version": output.agent_version,
                "input": case.input,
                "reference": case.reference,
                "response": output.response,
                "tool_calls": output.tool_calls,
                "latency_ms": output.latency_ms,
                "metadata": case.metadata,
                "output_metadata": output.metadata,
            }


def label_records(eval_set: EvalSet, rv: RubricVersion) -> Iterator[dict]:
    """Current labels of submitted annotations, in the order that reproduces the slots on import."""
    rows = (
        Label.objects.submitted()
        .filter(annotation__rubric_version=rv, annotation__output__case__eval_set=eval_set)
        .order_by(
            "annotation__output__case__case_id",
            "annotation__output__agent_version",
            "annotation__slot",
            "criterion__order",
        )
        .values_list(
            "annotation__output__case__case_id",
            "annotation__output__agent_version",
            "criterion__key",
            "annotation__annotator__username",
            "outcome",
            "evidence",
            "more_evidence",
        )
    )
    for *row, more in rows.iterator(chunk_size=5000):
        record: dict[str, Any] = dict(zip(LABEL_COLUMNS, row, strict=True))
        if more:  # several quotes: the list (one quote stays a string, as it always was)
            record["evidence"] = [record["evidence"], *more]
        yield record


def gold_records(eval_set: EvalSet, rv: RubricVersion) -> Iterator[dict]:
    """The effective gold per output and criterion (see the module docstring).

    Which outcome is gold comes from labeling.gold.derive_gold, the one rule the whole product reads
    gold by (with each criterion's gold policy); this adds who decided and why, and writes it in the
    import format.
    """
    import pandas as pd

    from labeling.gold import derive_gold

    adjudicated = {
        (output_id, criterion_id): (outcome, who, rationale)
        for output_id, criterion_id, outcome, who, rationale in GoldLabel.objects.current()
        .filter(rubric_version=rv, output__case__eval_set=eval_set)
        .values_list("output_id", "criterion_id", "outcome", "decided_by__username", "rationale")
    }
    labels = pd.DataFrame(
        Label.objects.submitted()
        .filter(annotation__rubric_version=rv, annotation__output__case__eval_set=eval_set)
        .values_list("annotation__output_id", "criterion_id", "outcome"),
        columns=["output", "criterion", "outcome"],
    )
    adjudicated_frame = pd.DataFrame(
        [(o, c, v[0]) for (o, c), v in adjudicated.items()], columns=["output", "criterion", "outcome"]
    )
    criteria = list(rv.criteria.order_by("order").values_list("pk", "key", "gold_policy"))
    gold = derive_gold(labels, adjudicated_frame, {pk: policy for pk, _, policy in criteria})
    votes = labels.groupby(["output", "criterion"]).outcome.agg(list).to_dict() if len(labels) else {}
    by_item = {(int(r.output), int(r.criterion)): r.gold for r in gold.itertuples()}
    outputs = (
        Output.objects.filter(pk__in={output for output, _ in by_item})
        .order_by("case__case_id", "agent_version")
        .values_list("pk", "case__case_id", "agent_version")
    )
    for output_id, case_id, agent_version in outputs.iterator(chunk_size=5000):
        for criterion_id, key, _ in criteria:
            outcome = by_item.get((output_id, criterion_id))
            if outcome is None:
                continue
            head = {"case_id": case_id, "agent_version": agent_version, "criterion": key}
            if (output_id, criterion_id) in adjudicated:
                _, who, rationale = adjudicated[(output_id, criterion_id)]
                yield {**head, "adjudicator": who, "outcome": outcome, "rationale": rationale}
            else:
                found = votes.get((output_id, criterion_id), [])
                rationale = f"{sum(1 for o in found if o == outcome)} of {len(found)} annotators agree"
                yield {**head, "adjudicator": AGREEMENT, "outcome": outcome, "rationale": rationale}


def write_jsonl(records: Iterator[dict], stream: IO[str]) -> int:
    n = 0
    for record in records:
        stream.write(json.dumps(record, ensure_ascii=False))
        stream.write("\n")
        n += 1
    return n


def write_csv(records: Iterator[dict], columns: tuple[str, ...], stream: IO[str]) -> int:
    writer = csv.writer(stream)
    writer.writerow(columns)
    n = 0
    for record in records:
        writer.writerow([_cell(record.get(c)) if c in record else "" for c in columns])
        n += 1
    return n


def _cell(value) -> str:
    if value is None:
        return ""
    if isinstance(value, dict | list):
        return _dumps(value)
    return csv_safe(str(value))


def export_scope(
    *,
    workspace: Workspace,
    eval_set_name: str,
    what: str,
    fmt: str,
    rubric_ref: str | None,
    known: tuple[str, ...] = WHAT,
) -> tuple[EvalSet, RubricVersion | None]:
    """The eval set and rubric version of `workspace` an export reads, or an ExportError saying what is wrong."""
    if what not in known:
        raise ExportError(f'--what must be one of {", ".join(known)}, not "{what}"')
    if fmt not in FORMATS:
        raise ExportError(f'--format must be one of {", ".join(FORMATS)}, not "{fmt}"')
    eval_set = EvalSet.objects.filter(workspace=workspace, name=eval_set_name).first()
    if eval_set is None:
        raise ExportError(f'there is no eval set "{eval_set_name}"')
    if what == "cases":
        return eval_set, None
    if fmt == "adk":
        raise ExportError("--format adk is for cases (an ADK eval set); use jsonl or csv")
    if not rubric_ref:
        raise ExportError(f"--what {what} needs --rubric NAME@VERSION")
    try:
        return eval_set, RubricVersion.objects.by_ref(rubric_ref, workspace)
    except UnknownName as exc:
        raise ExportError(str(exc)) from None


def export_data(
    *,
    stream: IO[str],
    workspace: Workspace,
    eval_set_name: str,
    what: str,
    fmt: str = "jsonl",
    rubric_ref: str | None = None,
) -> int:
    """Write cases, labels or gold of `workspace`'s eval set to `stream`; returns the number of records written."""
    eval_set, rv = export_scope(
        workspace=workspace, eval_set_name=eval_set_name, what=what, fmt=fmt, rubric_ref=rubric_ref
    )
    if what == "cases":
        if fmt == "adk":
            from .adk import write_evalset

            return write_evalset(eval_set, stream)
        records = case_records(eval_set)
        return write_jsonl(records, stream) if fmt == "jsonl" else write_csv(records, CASE_COLUMNS, stream)
    assert rv is not None  # export_scope finds one for labels and gold, or refuses
    records, columns = (
        (label_records(eval_set, rv), LABEL_COLUMNS) if what == "labels" else (gold_records(eval_set, rv), GOLD_COLUMNS)
    )
    return write_jsonl(records, stream) if fmt == "jsonl" else write_csv(records, columns, stream)
