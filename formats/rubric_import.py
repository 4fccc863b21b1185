"""Importing a rubric version from JSON or YAML: the file read into a rubric document, which
evals/rubric_versions.py checks and writes (the rules the rubric editor shares; docs/formats.md).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from evals import record_fields as f
from evals.models import Workspace
from evals.problems import Problems, line_of
from evals.rubric_versions import check_rubric, save_rubric_version

from .import_summary import ImportReport, plural
from .readers import Source, load_json_document, load_yaml_document, read_text, refuse_unsupported_type


def _load(source: Source, problems: Problems) -> Any:
    if source.suffix not in (".jsonl", ".ndjson", ".csv"):  # a cases or labels file: named as such below
        refuse_unsupported_type(source, problems, (".json", ".yaml", ".yml"), "rubrics")
    text = read_text(source, problems)
    if not text.strip():
        raise problems.fatal(None, None, "the file is empty")
    if source.suffix in (".yaml", ".yml"):
        return load_yaml_document(text, problems)
    if source.suffix == ".json" or text.lstrip()[:1] in "{[":
        return load_json_document(text, problems)
    return load_yaml_document(text, problems)


def read_rubric(source: Source, problems: Problems) -> tuple[str, str, str, list[dict]]:
    doc = _load(source, problems)
    if isinstance(doc, list) and doc and isinstance(doc[0], dict) and "annotations" in doc[0]:
        raise problems.fatal(line_of(doc), None, "this looks like a Label Studio export; import it with import_labels")
    if not isinstance(doc, dict):
        raise problems.fatal(
            line_of(doc, 1),
            None,
            f"a rubric is an object with name, version, instruction and criteria, not {f.json_type(doc)}",
        )
    if "criteria" not in doc and ({"case_id", "eval_cases", "evalCases", "eval_case_results"} & doc.keys()):
        raise problems.fatal(line_of(doc), None, "this looks like a cases file; import it with import_cases")
    return check_rubric(doc, problems)


def import_rubric(*, source: Source, workspace: Workspace | Callable[[], Workspace]) -> ImportReport:
    """Import the file's rubric version into `workspace`; given as a function (the command's --workspace), it is
    asked once the file is read, so a broken file is reported as such before the database is asked anything."""
    problems = Problems(source.name)
    name, version, instruction, criteria = read_rubric(source, problems)
    if not isinstance(workspace, Workspace):
        workspace = workspace()
    ref = f"{name}@{version}"
    if not save_rubric_version(
        workspace=workspace, name=name, version=version, instruction=instruction, criteria=criteria, problems=problems
    ):
        summary = f"{source.name}: {ref} is already imported with the same content; nothing changed."
        return ImportReport(source.name, summary, {"rubric_versions_created": 0, "criteria_created": 0})
    summary = f"{source.name}: imported {ref} ({plural(len(criteria), 'criterion', 'criteria')}) as a draft."
    return ImportReport(source.name, summary, {"rubric_versions_created": 1, "criteria_created": len(criteria)})
