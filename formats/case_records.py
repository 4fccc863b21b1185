"""A case and its output as one record, and reading them from JSONL and CSV.

Every reader of cases (these two, ADK files in adk.py, Inspect AI logs in inspect_log.py) builds its rows
with `build_rows`, so one record means the same whatever file it came from; the writers (case_writers.py)
and the import (case_import.py) take the rows. Nothing here imports them back.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Set
from dataclasses import dataclass
from typing import Annotated, Any, Required

from pydantic import AfterValidator, BaseModel, BeforeValidator, ConfigDict, Field, ValidationError, with_config
from pydantic_core import ErrorDetails
from typing_extensions import TypedDict  # pydantic reads typing's TypedDict only from Python 3.12

from evals import record_fields as f
from evals.problems import Problems, RecordError, suggest

from .readers import Source, iter_csv, iter_jsonl
from .record_model import (
    AGENT_VERSION_MAX,
    MAX_INT32,
    RECORD_CONFIG,
    CaseId,
    Ident,
    Text,
    refuse,
)

CASE_FIELDS = ("case_id", "input", "reference", "metadata")
OUTPUT_FIELDS = ("response", "tool_calls", "latency_ms", "agent_version", "output_metadata")
FIELDS = frozenset(CASE_FIELDS + OUTPUT_FIELDS)
TOOL_CALL_FIELDS = frozenset({"name", "args", "response"})
DEFAULT_AGENT_VERSION = "default"
EVAL_SET_NAME_MAX = 200  # a column size, as CASE_ID_MAX and AGENT_VERSION_MAX (record_model.py)

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


def _not_blank(value: str) -> str:
    if not value.strip():
        raise refuse("is empty")
    return value


@with_config(ConfigDict(extra="forbid", strict=True))
class ToolCallIn(TypedDict, total=False):
    """One tool call the agent made: its name, and its arguments and response as any JSON."""

    name: Required[Annotated[str, AfterValidator(_not_blank)]]
    args: Any
    response: Any


# A whole number of milliseconds, or a fraction rounded to the nearest one (so -0.5 is 0 and MAX_INT32 + 0.5 too
# many); true/false is not a number.
Milliseconds = (
    Annotated[int, Field(ge=0, le=MAX_INT32)]
    | Annotated[float, Field(ge=-0.5, lt=MAX_INT32 + 0.5, allow_inf_nan=False)]
)


AgentVersionText = Annotated[Ident, Field(max_length=AGENT_VERSION_MAX)]


class CaseRecordIn(BaseModel):
    """One case and (with a response) its output, as a JSON line, or a record an ADK or Inspect reader made, holds
    it; fields in the order their problems are reported. null is a value left out."""

    model_config = RECORD_CONFIG

    metadata: dict | None = None
    case_id: CaseId
    input: Annotated[Text, AfterValidator(_not_blank)]
    reference: Text | None = None
    tool_calls: list[ToolCallIn] | None = None
    output_metadata: dict | None = None
    # None or "": the import's default agent version (a whole number such as 0 is the agent version "0")
    agent_version: Annotated[AgentVersionText | None, BeforeValidator(lambda v: None if v == "" else v)] = None
    response: Text | None = None
    latency_ms: Milliseconds | None = None


def _cell(read: Any) -> BeforeValidator:
    """A CSV cell holding JSON text or a number, read by our helpers (the JSON guards); empty is left out."""

    def run(value: Any) -> Any:
        if not value.strip():
            return None
        try:
            return read(value)
        except RecordError as exc:
            raise refuse(exc.message, at=exc.field) from None

    return BeforeValidator(run)


class CaseRowIn(CaseRecordIn):
    """One CSV row: the same record, with its JSON and number columns read from their cells' text."""

    metadata: Annotated[dict | None, _cell(lambda v: f.json_object(v, "metadata", True))] = None
    tool_calls: Annotated[list[ToolCallIn] | None, _cell(lambda v: f.json_list(v, "tool_calls", True))] = None
    output_metadata: Annotated[dict | None, _cell(lambda v: f.json_object(v, "output_metadata", True))] = None
    latency_ms: Annotated[Milliseconds | None, _cell(lambda v: f.milliseconds(v, "latency_ms", True))] = None


def build_rows(
    values: Mapping[str, Any], line: int | None, default_agent_version: str, from_csv: bool = False
) -> tuple[CaseRow, OutputRow | None]:
    """One record -> its case and (unless it has no response) its output, validated."""
    if from_csv and not _has_output(values, from_csv):
        values = {k: v for k, v in values.items() if k not in OUTPUT_FIELDS}  # blank cells of no output
    try:
        record = (CaseRowIn if from_csv else CaseRecordIn).model_validate(values)
    except ValidationError as exc:
        first = _first_problem(exc.errors(include_url=False))
        if not _unknown_field(first) and _ORDER.get(str(first["loc"][0]), 0) > _ORDER["reference"]:
            _has_output(values, from_csv)  # an output without its response is said before its other fields
        raise RecordError(*_words(first)) from None
    metadata = record.metadata or {}
    case = CaseRow(
        line=line,
        case_id=record.case_id,
        input=record.input,
        reference=record.reference or "",
        metadata=metadata,
        metadata_json=f.stored_json(metadata, "metadata") if metadata else "{}",
    )
    if not _has_output(values, from_csv):
        return case, None
    if record.response is None:
        raise RecordError("response", "is missing")
    # A call without args or response gets them ({} and null), so every stored call has the same three keys.
    tool_calls = [
        call
        if len(call) == 3
        else {"name": call["name"], "args": call.get("args", {}), "response": call.get("response")}
        for call in record.tool_calls or ()
    ]
    output_metadata = record.output_metadata or {}
    latency = record.latency_ms
    output = OutputRow(
        line=line,
        case_id=case.case_id,
        agent_version=record.agent_version or default_agent_version,
        response=record.response,
        tool_calls=tool_calls,
        tool_calls_json=f.stored_json(tool_calls, "tool_calls") if tool_calls else "[]",
        latency_ms=round(latency) if isinstance(latency, float) else latency,
        metadata=output_metadata,
        metadata_json=f.stored_json(output_metadata, "output_metadata") if output_metadata else "{}",
    )
    return case, output


_ORDER = {name: i for i, name in enumerate(CaseRecordIn.model_fields)}


def _first_problem(errors: list[ErrorDetails]) -> ErrorDetails:
    """The problem a person reads first: an unknown field (a misspelt name explains the problems after it), then
    the fields in the order of CaseRecordIn, and inside a tool call an unknown key before its name."""

    def order(error: ErrorDetails) -> tuple:
        loc = error["loc"]
        return (not _unknown_field(error), _ORDER.get(str(loc[0]), -1), loc[1:2], error["type"] != "extra_forbidden")

    return min(errors, key=order)


def _unknown_field(error: ErrorDetails) -> bool:
    """A field the record does not have (not an unknown key inside a tool call)."""
    return len(error["loc"]) == 1 and error["type"] == "extra_forbidden"


def _words(error: ErrorDetails) -> tuple[str | None, str]:
    """(field, message) of one pydantic error, in the words the import has always used."""
    loc, kind, value, ctx = error["loc"], error["type"], error["input"], error.get("ctx") or {}
    name = str(loc[0])
    if name == "tool_calls" and len(loc) > 1 and isinstance(loc[1], int):
        return _tool_call_words(loc[1], loc[2:3], kind, value)
    if kind == "icewater":
        return ctx.get("at") or name, ctx["message"]
    if kind == "extra_forbidden":
        return name, f"unknown field{suggest(name, FIELDS)}; known fields: {', '.join(sorted(FIELDS))}"
    if value is None or kind == "missing":
        return name, "is missing"
    if name in ("metadata", "output_metadata"):
        return name, f"must be a JSON object, not {f.json_type(value)}"
    if name == "tool_calls":
        return name, f"must be a JSON list, not {f.json_type(value)}"
    if name == "latency_ms":
        if isinstance(value, bool) or not isinstance(value, int | float):
            return name, f"must be a number of milliseconds, not {f.json_type(value)}"
        if kind == "finite_number":
            return name, "must be a finite number"
        return name, f"must be between 0 and {MAX_INT32}, not {round(value)}"
    if kind == "string_type":
        return name, f"must be text, not {f.json_type(value)}"
    if kind in ("string_too_short", "too_short"):
        return name, "is empty"
    if kind in ("string_too_long", "too_long"):  # too_long: the column's size, checked after the name rule
        return name, f"is longer than {ctx['max_length']} characters"
    return name, error["msg"]  # a problem no field declares today: pydantic's own words


def _tool_call_words(i: int, key: tuple, kind: str, value: Any) -> tuple[str, str]:
    where = f"tool_calls[{i}]"
    if not key:
        return where, f"must be an object with name, args and response, not {f.json_type(value)}"
    if kind == "extra_forbidden":
        return f"{where}.{key[0]}", (
            f"unknown field{suggest(str(key[0]), TOOL_CALL_FIELDS)}; a tool call has name, args, response"
        )
    return f"{where}.name", "must be the tool's name (non-empty text)"


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


def _wrong_kind(keys: Set[str]) -> str | None:  # a JSONL object's keys (a view) or a CSV header
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
