"""A case and its output as one record, and reading them from JSONL and CSV.

Every reader of cases (these two, ADK files in adk.py, Inspect AI logs in inspect_log.py) builds its rows
with `build_rows`, so one record means the same whatever file it came from; the writers (case_writers.py)
and the import (case_import.py) take the rows. Nothing here imports them back.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any

from labeling import record_fields as f
from labeling.problems import Problems, RecordError, suggest

from .readers import Source, check_fields, iter_csv, iter_jsonl

CASE_FIELDS = ("case_id", "input", "reference", "metadata")
OUTPUT_FIELDS = ("response", "tool_calls", "latency_ms", "agent_version", "output_metadata")
FIELDS = frozenset(CASE_FIELDS + OUTPUT_FIELDS)
TOOL_CALL_FIELDS = frozenset({"name", "args", "response"})
DEFAULT_AGENT_VERSION = "default"
# Column sizes of labeling.models (checked here so SQLite refuses what PostgreSQL would).
CASE_ID_MAX = 300
AGENT_VERSION_MAX = 200
EVAL_SET_NAME_MAX = 200

# Keys that give away a file of another kind passed to import_cases.
_LABEL_KEYS = frozenset({"criterion", "outcome", "annotator", "adjudicator"})
# Top-level keys of ADK documents (snake_case as ADK's files write them, camelCase as its web API does).
DOCUMENT_KEYS = frozenset(
    {"eval_cases", "evalCases", "eval_case_results", "evalCaseResults", "eval_set_id", "evalSetId"}
)


@dataclass(slots=True)
class CaseRow:
    line: int | None  # None only where the document gave no line
    case_id: str
    input: str
    reference: str
    metadata: dict
    metadata_json: str
    # False for cases read from an ADK result file: such a file is about outputs and carries none of the
    # case's metadata, so an existing case is matched on case_id, input and reference only.
    compare_metadata: bool = True

    def fingerprint(self) -> tuple:
        # Per field, so a conflict can name the fields that differ; hash() is enough to tell
        # two lines of one file apart (a collision needs 2**64 tries), and keeps 200k keys small.
        return (hash(self.input), hash(self.reference), hash(self.metadata_json))


@dataclass(slots=True)
class OutputRow:
    line: int | None
    case_id: str
    agent_version: str
    response: str
    tool_calls: list
    tool_calls_json: str
    latency_ms: int | None
    metadata: dict
    metadata_json: str

    def fingerprint(self) -> tuple:
        return (hash(self.response), hash(self.tool_calls_json), self.latency_ms, hash(self.metadata_json))


CASE_COMPARED = ("input", "reference", "metadata")
OUTPUT_COMPARED = ("response", "tool_calls", "latency_ms", "output_metadata")


def case_conflict(case_id: str, eval_set: str, differing: list[str]) -> str:
    return (
        f'case "{case_id}" is already in eval set "{eval_set}" with a different {", ".join(differing)}; '
        "a case cannot change once imported (labels refer to it): give the changed case a new case_id "
        "or import it into a new eval set"
    )


def output_conflict(case_id: str, agent_version: str, differing: list[str]) -> str:
    return (
        f'the output of case "{case_id}" for agent_version "{agent_version}" is already imported with a different '
        f"{', '.join(differing)}; an output cannot change once imported (labels refer to it): "
        "import it under a new agent_version"
    )


def normalize_tool_calls(value: Any, from_csv: bool = False) -> list[dict]:
    calls = f.json_list(value, "tool_calls", from_csv)
    clean = []
    for i, call in enumerate(calls):
        if not isinstance(call, dict) or not call.keys() <= TOOL_CALL_FIELDS:
            _tool_call_error(i, call)
        name = call.get("name")
        if not isinstance(name, str) or not name.strip():
            raise RecordError(f"tool_calls[{i}].name", "must be the tool's name (non-empty text)")
        # A call that already has all three keys is kept as it is (most files): no copy per call.
        clean.append(
            call if len(call) == 3 else {"name": name, "args": call.get("args", {}), "response": call.get("response")}
        )
    return clean


def _tool_call_error(i: int, call: Any) -> None:
    where = f"tool_calls[{i}]"
    if not isinstance(call, dict):
        raise RecordError(where, f"must be an object with name, args and response, not {f.json_type(call)}")
    for key in call.keys() - TOOL_CALL_FIELDS:
        raise RecordError(
            f"{where}.{key}", f"unknown field{suggest(key, TOOL_CALL_FIELDS)}; a tool call has name, args, response"
        )


def build_rows(
    values: Mapping[str, Any], line: int | None, default_agent_version: str, from_csv: bool = False
) -> tuple[CaseRow, OutputRow | None]:
    """One record -> its case and (unless it has no response) its output, validated."""
    if not values.keys() <= FIELDS:
        check_fields(values.keys(), FIELDS)
    metadata = f.json_object(values.get("metadata"), "metadata", from_csv)
    case = CaseRow(
        line=line,
        case_id=f.ident(values.get("case_id"), "case_id", CASE_ID_MAX),
        input=f.text(values.get("input"), "input", required=True, allow_blank=False),
        reference=f.text(values.get("reference"), "reference"),
        metadata=metadata,
        metadata_json=f.stored_json(metadata, "metadata") if metadata else "{}",
    )
    if not _has_output(values, from_csv):
        return case, None
    tool_calls = normalize_tool_calls(values.get("tool_calls"), from_csv)
    output_metadata = f.json_object(values.get("output_metadata"), "output_metadata", from_csv)
    output = OutputRow(
        line=line,
        case_id=case.case_id,
        agent_version=f.ident(values.get("agent_version"), "agent_version", AGENT_VERSION_MAX, default_agent_version),
        response=f.text(values.get("response"), "response", required=True),
        tool_calls=tool_calls,
        tool_calls_json=f.stored_json(tool_calls, "tool_calls") if tool_calls else "[]",
        latency_ms=f.milliseconds(values.get("latency_ms"), "latency_ms", from_csv),
        metadata=output_metadata,
        metadata_json=f.stored_json(output_metadata, "output_metadata") if output_metadata else "{}",
    )
    return case, output


def _has_output(values: Mapping[str, Any], from_csv: bool) -> bool:
    """JSONL: the record has a "response" key. CSV: any output cell is filled in.

    A CSV cell cannot tell an empty response from none, so a row with an empty
    response and no agent_version, tool_calls, latency_ms or output_metadata
    defines only its case (this is how export_data writes a case without outputs).
    """
    if from_csv:
        return any(values.get(k, "").strip() for k in OUTPUT_FIELDS if k != "response") or bool(
            values.get("response", "")
        )
    if "response" in values:
        return True
    given = [k for k in OUTPUT_FIELDS if values.get(k) is not None]
    if given:
        raise RecordError("response", f"is missing (the record has {', '.join(given)} of an output)")
    return False


# --- reading files into rows -------------------------------------------------------------------------------


def _wrong_kind(keys: set[str] | frozenset[str]) -> str | None:
    if keys & _LABEL_KEYS:
        return "this looks like a labels file (it has criterion/outcome fields); import it with import_labels"
    if "criteria" in keys:
        return "this looks like a rubric (it has criteria); import it with import_rubric"
    return None


def iter_jsonl_rows(source: Source, problems: Problems, default_agent_version: str) -> Iterator[tuple]:
    first = True
    for line, value in iter_jsonl(source, problems):
        if not isinstance(value, dict):
            if first and isinstance(value, list):
                raise problems.fatal(line, None, "expected one JSON object a line, found a list")
            problems.add(line, None, f"expected a JSON object, found {f.json_type(value)}")
            continue
        if first:
            first = False
            wrong = _wrong_kind(value.keys())
            if wrong:
                raise problems.fatal(line, None, wrong)
        try:
            yield build_rows(value, line, default_agent_version)
        except RecordError as exc:
            problems.add(line, exc.field, exc.message)


def iter_csv_rows(source: Source, problems: Problems, default_agent_version: str) -> Iterator[tuple]:
    def check_header(header: set[str], line: int) -> None:
        wrong = _wrong_kind(header)
        if wrong:
            raise problems.fatal(line, None, wrong)
        for name in sorted(header - FIELDS):
            raise problems.fatal(line, name, f"unknown column{_suggest(name)}; known columns: {_known()}")
        for name in ("case_id", "input"):
            if name not in header:
                raise problems.fatal(line, name, "the header has no such column, and it is required")

    for line, cells in iter_csv(source, problems, check_header):
        try:
            yield build_rows(cells, line, default_agent_version, from_csv=True)
        except RecordError as exc:
            problems.add(line, exc.field, exc.message)


def _suggest(name: str) -> str:
    return suggest(name, FIELDS)


def _known() -> str:
    return ", ".join(CASE_FIELDS + OUTPUT_FIELDS)
