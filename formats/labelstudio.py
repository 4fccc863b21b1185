"""Reading a Label Studio JSON export (the "JSON" export: a list of tasks) as label records.

Expected labeling config: one <Choices> per criterion whose `name` is the
criterion key and whose choice values are PASS / FAIL / NOT_APPLICABLE / ABSTAIN;
optionally a <TextArea name="KEY_evidence"> per criterion (evidence), and for
ground-truth annotations <TextArea name="rationale"> (or "KEY_rationale").
Each task's `data` carries `case_id` and optionally `agent_version`.

An annotation marked `ground_truth` is gold (its author is the adjudicator);
cancelled (skipped) annotations are ignored, and so are predictions: they are
a model's, not a person's.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from evals import record_fields as f
from evals.problems import Problems, RecordError, line_of

from .label_records import LabelRecord, build_label
from .readers import Obj, Source, load_json_document, read_text

# Our field -> where it sits in a Label Studio task, for messages.
_LS_FIELD = {
    "case_id": "data.case_id",
    "agent_version": "data.agent_version",
    "criterion": "from_name",
    "outcome": "value.choices",
    "annotator": "completed_by",
    "adjudicator": "completed_by",
}


def person(completed_by: Any) -> str | None:
    """An account name for Label Studio's completed_by: the email when the export has it, else labelstudio-ID."""
    if isinstance(completed_by, dict):
        for key in ("email", "username"):
            if isinstance(completed_by.get(key), str) and completed_by[key].strip():
                return completed_by[key].strip()
        completed_by = completed_by.get("id")
    if isinstance(completed_by, int) and not isinstance(completed_by, bool):
        return f"labelstudio-{completed_by}"
    if isinstance(completed_by, str) and completed_by.strip():
        return completed_by.strip()
    return None


def _text_areas(results: list) -> dict[str, str]:
    texts = {}
    for item in results:
        if isinstance(item, dict) and item.get("type") == "textarea":
            value = (item.get("value") or {}).get("text")
            if isinstance(value, list):
                texts[str(item.get("from_name"))] = "\n".join(str(v) for v in value)
            elif isinstance(value, str):
                texts[str(item.get("from_name"))] = value
    return texts


def _annotation_records(task, t, annotation, a, default_agent_version, criteria, problems) -> Iterator[LabelRecord]:
    where = f"tasks[{t}].annotations[{a}]"
    line = line_of(annotation, line_of(task))
    if not isinstance(annotation, dict):
        problems.add(line, where, "must be an object")
        return
    if annotation.get("was_cancelled"):
        return
    name = person(annotation.get("completed_by"))
    if name is None:
        problems.add(line, f"{where}.completed_by", "is missing: who made this annotation?")
        return
    gold = bool(annotation.get("ground_truth"))
    results = annotation.get("result")
    if not isinstance(results, list):
        problems.add(line, f"{where}.result", "must be a list")
        return
    texts = _text_areas(results)
    data = task.get("data") if isinstance(task.get("data"), dict) else {}
    for r, item in enumerate(results):
        # Every object load_json_document reads is an Obj, which carries its line (a record needs one).
        if not isinstance(item, Obj) or item.get("type") != "choices":
            continue
        item_where = f"{where}.result[{r}]"
        key = item.get("from_name")
        choices = (item.get("value") or {}).get("choices") if isinstance(item.get("value"), dict) else None
        item_line = item.line
        if not isinstance(choices, list) or len(choices) != 1:
            problems.add(item_line, f"{item_where}.value.choices", "must hold exactly one choice (one outcome)")
            continue
        values = {
            "case_id": data.get("case_id"),
            "agent_version": data.get("agent_version"),
            "criterion": key,
            "outcome": choices[0],
        }
        if gold:
            values["adjudicator"] = name
            values["rationale"] = texts.get(f"{key}_rationale", texts.get("rationale", ""))
        else:
            values["annotator"] = name
            values["evidence"] = texts.get(f"{key}_evidence", "")
        try:
            yield build_label(values, item_line, default_agent_version, criteria)
        except RecordError as exc:
            field = _LS_FIELD.get(exc.field or "", exc.field)
            prefix = f"tasks[{t}]" if field and field.startswith("data.") else item_where
            problems.add(item_line, f"{prefix}.{field}", exc.message)


def iter_records(
    source: Source, problems: Problems, default_agent_version: str, criteria: list[str]
) -> Iterator[LabelRecord]:
    doc = load_json_document(read_text(source, problems), problems, root="tasks")
    if isinstance(doc, dict):
        if "criteria" in doc:
            raise problems.fatal(line_of(doc), None, "this looks like a rubric; import it with import_rubric")
        if doc.keys() & {"eval_cases", "evalCases", "eval_case_results", "evalCaseResults"}:
            raise problems.fatal(line_of(doc), None, "this is an ADK eval file; import it with import_cases")
        raise problems.fatal(
            line_of(doc), None, "expected a Label Studio JSON export (a list of tasks), found an object"
        )
    if not isinstance(doc, list):
        raise problems.fatal(
            1, None, f"expected a Label Studio JSON export (a list of tasks), found {f.json_type(doc)}"
        )
    if not doc:
        raise problems.fatal(line_of(doc), None, "the export has no tasks")
    for t, task in enumerate(doc):
        line = line_of(task, line_of(doc))
        if not isinstance(task, dict) or not isinstance(task.get("data"), dict):
            problems.add(line, f"tasks[{t}].data", "each task needs a data object with the case_id")
            continue
        annotations = task.get("annotations") or task.get("completions") or []  # "completions": Label Studio < 1.0
        for a, annotation in enumerate(annotations):
            yield from _annotation_records(task, t, annotation, a, default_agent_version, criteria, problems)
