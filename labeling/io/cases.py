"""Importing cases and outputs: JSONL, CSV and Google ADK files, idempotently.

One record is one output of one case (a record without a response defines
only the case). A case or output that is already there with the same content
is skipped; with different content it is an error, because labels refer to
outputs and a silent overwrite would leave them describing something else.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any

from django.db import IntegrityError, connection, transaction

from evals.models import Case, EvalSet, Output

from . import fields as f
from .errors import Problems, RecordError
from .planner import analyze_after_import
from .readers import Source, check_fields, iter_csv, iter_jsonl, peek_first_line, refuse_unsupported_type, suggest
from .report import ImportReport, plural

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
_DOCUMENT_KEYS = frozenset(
    {"eval_cases", "evalCases", "eval_case_results", "evalCaseResults", "eval_set_id", "evalSetId"}
)


@dataclass(slots=True)
class CaseRow:
    line: int
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
    line: int
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
    values: Mapping[str, Any], line: int, default_agent_version: str, from_csv: bool = False
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


# The endings a cases file may have (Source.suffix); another is refused as an unsupported file type.
CASE_FILE_TYPES = (".jsonl", ".ndjson", ".csv", ".json", ".evalset.json", ".evalset_result.json", ".test.json", ".eval")


def detect_kind(source: Source, problems: Problems) -> str:
    """'jsonl', 'csv', 'adk_evalset' or 'adk_result', from the name first, then the content."""
    suffix = source.suffix
    from .inspect_log import is_inspect_log

    if is_inspect_log(source):
        return "inspect"
    if suffix == ".evalset_result.json":
        return "adk_result"
    if suffix == ".evalset.json":
        return "adk_evalset"
    if suffix in (".yaml", ".yml"):
        raise problems.fatal(None, None, "this is a YAML file, as rubrics are; import a rubric with import_rubric")
    refuse_unsupported_type(source, problems, CASE_FILE_TYPES, "cases and outputs")
    if suffix == ".csv":
        return "csv"
    if suffix in (".jsonl", ".ndjson"):
        return "jsonl"
    first = peek_first_line(source)
    if not first:
        raise problems.fatal(None, None, "the file is empty")
    if suffix in (".json", ".test.json") or first[:1] in (b"{", b"[", b'"'):
        try:
            value = f.parse_json(first.decode("utf-8", "replace"))
        except f.ShapeError:
            return "jsonl"  # a whole value, refused for its shape: the reader says where, with the line
        except ValueError:
            return "json_document"  # pretty-printed: the first line is not a whole value
        if isinstance(value, dict) and not (value.keys() & _DOCUMENT_KEYS):
            return "jsonl"  # a whole record on the first line: one record a line
        return "json_document"
    return "csv"


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


def iter_rows(
    kind: str, source: Source, problems: Problems, default_agent_version: str, agent_version_given: bool = True
) -> Iterator[tuple]:
    if kind == "inspect":
        from . import inspect_log

        return inspect_log.iter_rows(source, problems, default_agent_version if agent_version_given else None)
    if kind == "jsonl":
        return iter_jsonl_rows(source, problems, default_agent_version)
    if kind == "csv":
        return iter_csv_rows(source, problems, default_agent_version)
    from . import adk

    return adk.iter_rows(kind, source, problems, default_agent_version)


# --- the import --------------------------------------------------------------------------------------------


@dataclass
class FeedStats:
    records: int = 0
    repeated: int = 0


def feed(rows: Iterator[tuple], writer, problems: Problems) -> FeedStats:
    """Pass each case and output to the writer once; repeats must be identical to the first line."""
    stats = FeedStats()
    cases: dict[str, tuple[int, tuple]] = {}
    outputs: dict[tuple[str, str], tuple[int, tuple]] = {}
    for case, output in rows:
        stats.records += 1
        fingerprint = case.fingerprint()
        seen = cases.get(case.case_id)
        if seen is None:
            cases[case.case_id] = (case.line, fingerprint)
            writer.add_case(case)
        elif seen[1] != fingerprint:
            differing = [n for n, a, b in zip(CASE_COMPARED, seen[1], fingerprint, strict=True) if a != b]
            problems.add(
                case.line,
                differing[0],
                f'case "{case.case_id}" has a different {", ".join(differing)} than on line {seen[0]}; '
                "every line of a case must repeat the same input, reference and metadata",
            )
            continue
        if output is None:
            continue
        key = (output.case_id, output.agent_version)
        fingerprint = output.fingerprint()
        seen = outputs.get(key)
        if seen is None:
            outputs[key] = (output.line, fingerprint)
            writer.add_output(output)
        elif seen[1] != fingerprint:
            differing = [n for n, a, b in zip(OUTPUT_COMPARED, seen[1], fingerprint, strict=True) if a != b]
            problems.add(
                output.line,
                differing[0],
                f'the output of case "{output.case_id}" for agent_version "{output.agent_version}" differs '
                f"from line {seen[0]} ({', '.join(differing)}); give one of them another agent_version",
            )
        else:
            stats.repeated += 1
    return stats


def use_fast_path(fast_path: bool | None) -> bool:
    if fast_path is None:
        return connection.vendor == "postgresql"
    if fast_path and connection.vendor != "postgresql":
        raise ValueError("the COPY fast path needs PostgreSQL")
    return fast_path


def check_eval_set_name(name: str, problems: Problems) -> str:
    try:
        return f.ident(name, "eval set", EVAL_SET_NAME_MAX)
    except RecordError as exc:
        raise problems.fatal(None, "eval set", exc.message) from None


def import_cases(
    *,
    source: Source,
    eval_set_name: str,
    default_agent_version: str | None = None,
    fast_path: bool | None = None,
) -> ImportReport:
    """Import a cases file into an eval set (created if missing); all or nothing.

    `default_agent_version` None: "default", except for an Inspect AI log, whose outputs take the model's name.
    """
    from .casewriters import BulkWriter, CopyWriter

    problems = Problems(source.name)
    eval_set_name = check_eval_set_name(eval_set_name, problems)
    agent_version_given = default_agent_version is not None
    try:
        default_agent_version = f.ident(
            DEFAULT_AGENT_VERSION if default_agent_version is None else default_agent_version,
            "agent_version",
            AGENT_VERSION_MAX,
        )
    except RecordError as exc:
        raise problems.fatal(None, "agent_version", exc.message) from None
    kind = detect_kind(source, problems)
    try:
        with transaction.atomic():
            eval_set, created_set = EvalSet.objects.get_or_create(name=eval_set_name)
            # One import at a time per eval set: the checks and the inserts must see the same rows.
            EvalSet.objects.select_for_update().filter(pk=eval_set.pk).first()
            writer = (CopyWriter if use_fast_path(fast_path) else BulkWriter)(eval_set, problems)
            try:
                stats = feed(
                    iter_rows(kind, source, problems, default_agent_version, agent_version_given), writer, problems
                )
                if stats.records == 0 and not problems:
                    raise problems.fatal(None, None, "the file has no records")
                counts = writer.finish()
            except BaseException:
                writer.abort()
                raise
            problems.raise_if_any()
    except IntegrityError as exc:
        raise problems.fatal(None, None, f"the eval set changed during the import; try again ({exc})") from None
    counts = {"records": stats.records, "repeated_lines": stats.repeated, **counts}
    analyze_after_import(counts["cases_created"] + counts["outputs_created"], Case, Output)
    summary = (
        f'{source.name} -> eval set "{eval_set.name}"{" (new)" if created_set else ""}: '
        f"{plural(counts['cases_created'], 'case')} created, {counts['cases_unchanged']:,} already there; "
        f"{plural(counts['outputs_created'], 'output')} created, {counts['outputs_unchanged']:,} already there."
    )
    notes = (
        [f"{plural(stats.repeated, 'repeated line')} skipped (identical to an earlier line)."] if stats.repeated else []
    )
    return ImportReport(file=source.name, summary=summary, counts=counts, notes=notes)
