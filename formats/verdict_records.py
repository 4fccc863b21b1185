"""A verdict as one record, and reading verdicts from JSONL, CSV and ADK result files.

Inspect AI logs' scores are read in inspect_scores.py into the same record; the import (verdicts.py) takes
the records. Nothing here imports either back.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Annotated, Any

from pydantic import AfterValidator, BaseModel, Field, Strict, ValidationInfo

from evals import record_fields as f
from evals.problems import Problems, RecordError, line_of, suggest
from judging.models import VerdictOutcome

from .adk import ICEWATER_KEY, load_document
from .readers import Source, iter_csv, iter_jsonl, peek_first_line
from .record_model import (
    CASE_ID_MAX,
    RECORD_CONFIG,
    AgentVersion,
    CaseId,
    Count,
    Ident,
    Text,
    TextOrJson,
    context,
    refuse,
    validate,
    whole_number,
)


@dataclass(slots=True)
class VerdictRecord:
    line: int | None
    case_id: str
    agent_version: str | None  # None: take the case's only output (or --agent-version)
    criterion: str
    outcome: str
    evidence: str
    raw: str
    sample: int = 0
    error_reason: str = ""
    latency_ms: int | None = None
    tokens_in: int | None = None
    tokens_out: int | None = None
    cache_hit: bool = False
    check_quote: bool = True  # ADK rationales are not quotes: nothing to check


REQUIRED_FIELDS = ("case_id", "agent_version", "criterion", "outcome", "evidence", "raw")
EXPORT_COLUMNS = (
    "case_id",
    "agent_version",
    "criterion",
    "sample",
    "outcome",
    "evidence",
    "raw",
    "error_reason",
    "latency_ms",
    "tokens_in",
    "tokens_out",
    "cache_hit",
)
IMPORT_FIELDS = frozenset(EXPORT_COLUMNS)
OUTCOMES = tuple(VerdictOutcome.values)


def is_adk_result(source: Source) -> bool:
    """An ADK result by its name, or a .json file that is one JSON document rather than JSON lines."""
    if source.suffix == ".evalset_result.json":
        return True
    if source.suffix != ".json":
        return False
    first = peek_first_line(source)
    try:
        value = f.parse_json(first.decode("utf-8", "replace"))
    except f.ShapeError:
        return False  # a whole JSON line, refused for its shape: the JSONL reader says where
    except ValueError:
        return True  # a pretty-printed document starts with a lone "{"
    return isinstance(value, dict) and _adk_get(value, "eval_case_results") is not None


def jsonl_records(source: Source, problems: Problems, keys: list[str]) -> Iterator[VerdictRecord]:
    for line, value in iter_jsonl(source, problems):
        try:
            yield _record(line, value, keys)
        except RecordError as exc:
            problems.add(line, exc.field, exc.message)


def csv_records(source: Source, problems: Problems, keys: list[str]) -> Iterator[VerdictRecord]:
    """The CSV that export_verdicts writes: its columns, an empty cell for a value left out."""

    def check_header(header: set[str], line: int) -> None:
        for name in sorted(header - IMPORT_FIELDS):
            raise problems.fatal(line, name, f"unknown column{suggest(name, IMPORT_FIELDS)}")
        for name in ("case_id", "criterion", "outcome"):
            if name not in header:
                raise problems.fatal(line, name, "the header has no such column, and it is required")

    for line, cells in iter_csv(source, problems, check_header):
        try:
            yield _record(line, _csv_values(cells), keys)
        except RecordError as exc:
            problems.add(line, exc.field, exc.message)


_CSV_COUNTS = frozenset({"sample", "latency_ms", "tokens_in", "tokens_out"})
_CSV_FLAGS = {"true": True, "false": False}


def _csv_values(cells: dict[str, str]) -> dict[str, Any]:
    """CSV cells as the JSON values of a JSONL record: numbers and true/false typed, empty cells left out."""
    values: dict[str, Any] = {}
    for name, cell in cells.items():
        if name in _CSV_COUNTS or name == "cache_hit":
            if not cell.strip():
                continue
            if name == "cache_hit":
                if cell.strip().lower() not in _CSV_FLAGS:
                    raise RecordError(name, f"must be true or false, not {cell!r}")
                values[name] = _CSV_FLAGS[cell.strip().lower()]
            elif not cell.strip().isascii() or not cell.strip().isdigit():
                raise RecordError(name, f"must be a whole number, not {cell!r}")
            else:
                values[name] = int(cell)
        else:
            values[name] = cell
    return values


def _known_criterion(criterion: str, info: ValidationInfo) -> str:
    keys: list[str] = context(info)
    if criterion not in keys:
        raise refuse(
            f'"{criterion}" is not a criterion of the rubric{suggest(criterion, keys)}; '
            f"its criteria are {', '.join(keys)}"
        )
    return criterion


def _outcome(value: Any) -> str:
    if value not in OUTCOMES:
        hint = suggest(str(value).upper(), OUTCOMES) if isinstance(value, str) else ""
        raise refuse(f"must be one of {', '.join(OUTCOMES)}, not {json.dumps(value)}{hint}")
    return value


class VerdictIn(BaseModel):
    """One verdict line (JSONL) or row (CSV), fields in the order their problems are reported."""

    model_config = RECORD_CONFIG

    criterion: Annotated[Ident, Field(max_length=100), AfterValidator(_known_criterion)]
    outcome: Annotated[Any, AfterValidator(_outcome)] = Field(default=None, validate_default=True)
    case_id: CaseId
    # None or "": take the case's only output (or --agent-version)
    agent_version: AgentVersion = None
    evidence: Text = ""
    raw: TextOrJson = ""
    sample: Annotated[int, Strict(), Field(ge=0, le=1000), whole_number(1000)] = 0
    error_reason: Text = ""
    latency_ms: Count | None = None
    tokens_in: Count | None = None
    tokens_out: Count | None = None
    cache_hit: bool = False


def _record(line: int, value: Any, keys: list[str]) -> VerdictRecord:
    if not isinstance(value, dict):
        raise RecordError(None, f"must be a JSON object with {', '.join(REQUIRED_FIELDS)}, not {f.json_type(value)}")
    # null is a value left out (a required one is then missing)
    verdict = validate(VerdictIn, {k: v for k, v in value.items() if v is not None}, keys)
    return VerdictRecord(line=line, **verdict.model_dump())


# -- ADK eval results ------------------------------------------------------------------------------------


def _adk_get(obj: Any, key: str) -> Any:
    """obj[key] in snake_case (ADK's files) or camelCase (its web API)."""
    if not isinstance(obj, dict):
        return None
    if key in obj:
        return obj[key]
    head, *rest = key.split("_")
    return obj.get(head + "".join(w.capitalize() for w in rest))


def adk_records(source: Source, problems: Problems, keys: list[str]) -> Iterator[VerdictRecord]:
    doc = load_document(source, problems)
    results = _adk_get(doc, "eval_case_results")
    if not isinstance(results, list):
        raise problems.fatal(
            line_of(doc),
            "eval_case_results",
            "this is not an ADK eval result (.evalset_result.json): no eval_case_results",
        )
    scored_anything = False
    for ci, case_result in enumerate(results):
        path = f"eval_case_results[{ci}]"
        line = line_of(case_result, line_of(results))
        try:
            eval_id = f.ident(_adk_get(case_result, "eval_id"), "eval_id", CASE_ID_MAX)
        except RecordError as exc:
            problems.add(line, f"{path}.{exc.field}", exc.message)
            continue
        for case_id, metrics, where in _adk_units(case_result, eval_id, path):
            scores = _rubric_scores(metrics, where, line, keys, problems)
            scored_anything = scored_anything or bool(scores)
            for key in keys:
                yield _adk_verdict(line, case_id, key, scores.get(key))
    if results and not scored_anything and not problems:
        raise problems.fatal(
            line_of(doc),
            None,
            "no per-rubric scores anywhere in this ADK result: only rubric-based metrics "
            "(e.g. rubric_based_final_response_quality_v1) give verdicts per criterion",
        )


def _adk_units(case_result: dict, eval_id: str, path: str) -> list[tuple[str, list, str]]:
    """(case_id, metric results, where) per graded turn, with case ids as import_cases gives them."""
    per_invocation = _adk_get(case_result, "eval_metric_result_per_invocation")
    per_invocation = per_invocation if isinstance(per_invocation, list) else []
    overall = _adk_get(case_result, "overall_eval_metric_results")
    if len(per_invocation) <= 1:
        metrics = overall if isinstance(overall, list) and overall else None
        if metrics is None and per_invocation:
            metrics = _adk_get(per_invocation[0], "eval_metric_results")
        return [(eval_id, metrics if isinstance(metrics, list) else [], f"{path}.overall_eval_metric_results")]
    units = []
    for turn, entry in enumerate(per_invocation, start=1):
        invocation = _adk_get(entry, "expected_invocation") or _adk_get(entry, "actual_invocation") or {}
        extra = invocation.get(ICEWATER_KEY) if isinstance(invocation, dict) else None
        if isinstance(extra, dict) and extra.get("case_id"):
            case_id = str(extra["case_id"])
        else:
            case_id = f"{eval_id}#{_adk_get(invocation, 'invocation_id') or turn}"
        metrics = _adk_get(entry, "eval_metric_results")
        where = f"{path}.eval_metric_result_per_invocation[{turn - 1}]"
        units.append((case_id, metrics if isinstance(metrics, list) else [], where))
    return units


def _rubric_scores(metrics: list, where: str, line: int | None, keys: list[str], problems: Problems) -> dict:
    """rubric_id -> {"metric", "rubric_id", "score", "rationale"} from every metric that scored rubrics."""
    scores: dict[str, dict] = {}
    for mi, metric in enumerate(metrics):
        name = _adk_get(metric, "metric_name") or f"metric {mi}"
        rubric_scores = _adk_get(_adk_get(metric, "details"), "rubric_scores")
        for ri, score in enumerate(rubric_scores if isinstance(rubric_scores, list) else []):
            at = f"{where}[{mi}].details.rubric_scores[{ri}]"
            rubric_id = _adk_get(score, "rubric_id")
            if not isinstance(rubric_id, str) or not rubric_id:
                problems.add(line_of(score, line), f"{at}.rubric_id", "is missing")
                continue
            if rubric_id not in keys:
                problems.add(
                    line_of(score, line),
                    f"{at}.rubric_id",
                    f'"{rubric_id}" is not a criterion of the rubric{suggest(rubric_id, keys)}; '
                    f"its criteria are {', '.join(keys)}",
                )
                continue
            if rubric_id in scores:
                problems.add(line_of(score, line), f"{at}.rubric_id", f'"{rubric_id}" is scored by two metrics')
                continue
            scores[rubric_id] = {
                "metric": name,
                "rubric_id": rubric_id,
                "score": _adk_get(score, "score"),
                "rationale": _adk_get(score, "rationale"),
                "line": line_of(score, line),
            }
    return scores


def _adk_verdict(line: int | None, case_id: str, key: str, score: dict | None) -> VerdictRecord:
    def record(outcome: str, reason: str = "") -> VerdictRecord:
        raw = {k: v for k, v in (score or {}).items() if k != "line"}
        return VerdictRecord(
            line=(score or {}).get("line", line),
            case_id=case_id,
            agent_version=None,
            criterion=key,
            outcome=outcome,
            evidence="",
            raw=json.dumps(raw, ensure_ascii=False, sort_keys=True) if raw else "",
            error_reason=reason,
            check_quote=False,
        )

    if score is None:
        return record(VerdictOutcome.ERROR, "the ADK result has no score for this rubric")
    value = score["score"]
    if value is None:
        return record(VerdictOutcome.ERROR, "ADK did not score this rubric (score is missing)")
    if value == 1 and not isinstance(value, bool):
        return record(VerdictOutcome.PASS)
    if value == 0 and not isinstance(value, bool):
        return record(VerdictOutcome.FAIL)
    return record(VerdictOutcome.ERROR, f"ADK score {value!r} is neither 1 (PASS) nor 0 (FAIL)")


# -- resolving and writing --------------------------------------------------------------------------------
