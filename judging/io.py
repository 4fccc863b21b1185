"""Verdicts in and out of Icewater: JSONL and CSV both ways, and Google ADK eval results in.

Export writes the current verdicts (judging/current_verdicts.py) of an eval set x rubric version x
judge config, one record per output, criterion and sample:

    {"case_id", "agent_version", "criterion", "sample", "outcome", "evidence", "raw",
     "error_reason", "latency_ms", "tokens_in", "tokens_out", "cache_hit"}

Import reads that format back (only case_id, agent_version, criterion, outcome are required;
evidence and raw are expected, the rest optional), as JSONL or as the CSV the export writes, an
Inspect AI log (judging/inspect_scores.py: each scorer is a criterion, C is PASS, I is FAIL), or
an ADK `.evalset_result.json`, whose rubric-based metrics' per-rubric scores become verdicts:
rubric_id is the criterion key, score 1 is PASS, 0 is FAIL, and a missing score (or a criterion
with no score) is ERROR. An import is atomic with line-numbered errors, creates the judge config
(backend "imported") when it does not exist, and records one finished run, so imported verdicts
read exactly like judged ones. It writes only into an imported judge config: a model or instrument
config's verdicts come only from its own judge runs (`imported_only`). The run keeps how it came in
(`imported_via`: the command or a push) and the file's name. Importing the same verdicts again
changes nothing; a verdict already there with different content is an error (never an overwrite)
unless the user names a new run for the file (`new_run`, `import_verdicts --new-run LABEL`).
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from dataclasses import dataclass
from typing import IO, Any

from django.db import transaction
from django.utils import timezone

from evals.models import EvalSet, Output, RubricVersion
from evals.transcript import Transcript
from labeling.io import export as labeling_export
from labeling.io import fields as f
from labeling.io.adk import ICEWATER_KEY, load_document
from labeling.io.cases import AGENT_VERSION_MAX, CASE_ID_MAX
from labeling.io.errors import Problems, RecordError
from labeling.io.export import ExportError, export_scope, write_csv, write_jsonl
from labeling.io.inspect_log import is_inspect_log
from labeling.io.readers import Source, check_fields, iter_csv, iter_jsonl, line_of, peek_first_line, suggest
from labeling.io.report import ImportReport, plural
from labeling.io.rubrics import find_version

from .current_verdicts import current_verdicts
from .inspect_scores import ScoreMapping, inspect_records
from .models import ErrorKind, JudgeConfig, JudgeRun, Verdict, VerdictOutcome

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
JUDGE_NAME_MAX = 200
RUN_LABEL_MAX = 200  # JudgeRun.label
IMPORTED_ERROR = "imported as ERROR (no reason given)"


# -- export ---------------------------------------------------------------------------------------------


def verdict_records(*, eval_set: EvalSet, rubric_version: RubricVersion, judge_config: JudgeConfig) -> Iterator[dict]:
    rows = (
        current_verdicts(eval_set=eval_set, rubric_version=rubric_version, judge_config=judge_config)
        .order_by("output__case__case_id", "output__agent_version", "criterion__order", "sample")
        .values_list(
            "output__case__case_id",
            "output__agent_version",
            "criterion__key",
            "sample",
            "outcome",
            "evidence",
            "raw_output",
            "error_reason",
            "latency_ms",
            "tokens_in",
            "tokens_out",
            "cache_hit",
        )
    )
    for row in rows.iterator(chunk_size=2000):
        yield dict(zip(EXPORT_COLUMNS, row, strict=True))


# Every export_data kind: labeling's, plus the verdicts judging owns.
EXPORT_WHAT = (*labeling_export.WHAT, "verdicts")


def export_data(
    *,
    eval_set_name: str,
    what: str,
    stream: IO[str],
    fmt: str = "jsonl",
    rubric_ref: str | None = None,
    judge_name: str | None = None,
) -> int:
    """What `manage.py export_data` writes: verdicts here, cases, labels and gold through labeling.io."""
    if what != "verdicts":
        if what not in EXPORT_WHAT:
            raise ExportError(f'--what must be one of {", ".join(EXPORT_WHAT)}, not "{what}"')
        return labeling_export.export_data(
            eval_set_name=eval_set_name, what=what, stream=stream, fmt=fmt, rubric_ref=rubric_ref
        )
    eval_set, rv = export_scope(
        eval_set_name=eval_set_name, what=what, fmt=fmt, rubric_ref=rubric_ref, known=EXPORT_WHAT
    )
    if not judge_name:
        raise ExportError("--what verdicts needs --judge NAME (the judge config whose verdicts to export)")
    judge = JudgeConfig.objects.filter(name=judge_name).first()
    if judge is None:
        known = ", ".join(JudgeConfig.objects.values_list("name", flat=True)[:20]) or "none yet"
        raise ExportError(f'there is no judge config "{judge_name}" (known: {known})')
    return export_verdicts(eval_set=eval_set, rubric_version=rv, judge_config=judge, fmt=fmt, stream=stream)


def export_verdicts(
    *, eval_set: EvalSet, rubric_version: RubricVersion, judge_config: JudgeConfig, fmt: str, stream: IO[str]
) -> int:
    """Write the current verdicts as JSONL or CSV; return how many records were written."""
    records = verdict_records(eval_set=eval_set, rubric_version=rubric_version, judge_config=judge_config)
    if fmt == "jsonl":
        return write_jsonl(records, stream)
    if fmt == "csv":
        as_text = ({**r, "cache_hit": "true" if r["cache_hit"] else "false"} for r in records)
        return write_csv(as_text, EXPORT_COLUMNS, stream)
    raise ValueError(f"verdicts are exported as jsonl or csv, not {fmt!r}")


# -- import ---------------------------------------------------------------------------------------------


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


def import_verdicts(
    *,
    source: Source,
    eval_set_name: str,
    rubric_ref: str,
    judge_name: str,
    default_agent_version: str = "",
    new_run: str = "",
    score_mapping: ScoreMapping | None = None,
    via: str = JudgeRun.ImportedVia.COMMAND,
) -> ImportReport:
    """Import verdicts as one finished run; all or nothing. Only into an imported judge config (or a new name,
    which creates one): a config that runs is refused before the file is read.

    A verdict already there (same output, criterion, sample) with the same content is skipped; with
    different content it is an error, unless `new_run` names a run of its own for the whole file: then the
    file becomes that run, which supersedes the earlier verdicts item by item as a judged run would.
    `score_mapping`: for an Inspect AI log, which scorer is which criterion and what its values mean.
    """
    problems = Problems(source.name)
    eval_set = EvalSet.objects.filter(name=eval_set_name).first()
    if eval_set is None:
        raise problems.fatal(None, "eval set", f'there is no eval set "{eval_set_name}"; import its cases first')
    try:
        rv = find_version(rubric_ref)
        judge_name = f.ident(judge_name, "judge", JUDGE_NAME_MAX)
        if default_agent_version:
            default_agent_version = f.ident(default_agent_version, "agent_version", AGENT_VERSION_MAX)
        if new_run:
            new_run = f.ident(new_run, "new run", RUN_LABEL_MAX)
    except ValueError as exc:
        raise problems.fatal(None, "rubric", str(exc)) from None
    except RecordError as exc:
        raise problems.fatal(None, exc.field, exc.message) from None
    imported_only(JudgeConfig.objects.filter(name=judge_name).first(), problems)
    keys = list(rv.criteria.order_by("order").values_list("key", flat=True))
    if is_inspect_log(source):
        records = list(inspect_records(source, problems, keys, score_mapping or ScoreMapping(), default_agent_version))
    elif source.suffix == ".csv":
        records = list(csv_records(source, problems, keys))
    elif is_adk_result(source):
        records = list(adk_records(source, problems, keys))
    else:
        records = list(jsonl_records(source, problems, keys))
    if not records and not problems:
        raise problems.fatal(None, None, "the file has no verdicts")
    resolved = _resolve(records, eval_set, default_agent_version, problems)
    problems.raise_if_any()
    return _write(source, eval_set, rv, judge_name, resolved, new_run, problems, via)


def imported_only(judge: JudgeConfig | None, problems: Problems) -> None:
    """ImportFailed unless `judge` is missing (the import creates it) or imported: the provenance rule."""
    if judge is not None and not judge.takes_imports:
        raise problems.fatal(
            None,
            "judge",
            f'judge config "{judge.name}" is a {judge.get_backend_display()} config: its verdicts come only from its '
            "own judge runs, never from an import or a push. Import these verdicts under another judge config name "
            '(a new name creates one with backend "imported") and calibrate that one',
        )


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


def _record(line: int, value: Any, keys: list[str]) -> VerdictRecord:
    if not isinstance(value, dict):
        raise RecordError(None, f"must be a JSON object with {', '.join(REQUIRED_FIELDS)}, not {f.json_type(value)}")
    check_fields(value, IMPORT_FIELDS)
    criterion = f.ident(value.get("criterion"), "criterion", 100)
    if criterion not in keys:
        raise RecordError(
            "criterion",
            f'"{criterion}" is not a criterion of the rubric{suggest(criterion, keys)}; '
            f"its criteria are {', '.join(keys)}",
        )
    outcome = value.get("outcome")
    if outcome not in OUTCOMES:
        hint = suggest(str(outcome).upper(), OUTCOMES) if isinstance(outcome, str) else ""
        raise RecordError("outcome", f"must be one of {', '.join(OUTCOMES)}, not {json.dumps(outcome)}{hint}")
    agent_version = value.get("agent_version")
    return VerdictRecord(
        line=line,
        case_id=f.ident(value.get("case_id"), "case_id", CASE_ID_MAX),
        agent_version=None
        if agent_version in (None, "")
        else f.ident(agent_version, "agent_version", AGENT_VERSION_MAX),
        criterion=criterion,
        outcome=outcome,
        evidence=f.text(value.get("evidence"), "evidence"),
        raw=_raw(value.get("raw")),
        sample=_count(value.get("sample"), "sample", default=0, maximum=1000),
        error_reason=f.text(value.get("error_reason"), "error_reason"),
        latency_ms=_count(value.get("latency_ms"), "latency_ms"),
        tokens_in=_count(value.get("tokens_in"), "tokens_in"),
        tokens_out=_count(value.get("tokens_out"), "tokens_out"),
        cache_hit=_flag(value.get("cache_hit"), "cache_hit"),
    )


def _raw(value: Any) -> str:
    # The judge's raw output is text; a JSON value (an ADK rubric score, a tool input) is kept as its JSON.
    if value is None:
        return ""
    if isinstance(value, str):
        return f.text(value, "raw")
    return f.stored_json(value, "raw")


def _count(value: Any, field: str, default: int | None = None, maximum: int = 2**31 - 1) -> int | None:
    if value is None:
        return default
    if not isinstance(value, int) or isinstance(value, bool) or not 0 <= value <= maximum:
        raise RecordError(field, f"must be a whole number from 0 to {maximum}, not {json.dumps(value)}")
    return value


def _flag(value: Any, field: str) -> bool:
    if value is None:
        return False
    if not isinstance(value, bool):
        raise RecordError(field, f"must be true or false, not {json.dumps(value)}")
    return value


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


def _resolve(
    records: list[VerdictRecord], eval_set: EvalSet, default_agent_version: str, problems: Problems
) -> list[tuple[int, VerdictRecord]]:
    """(output id, record) per record; unknown outputs, ambiguous agent versions and repeats are problems."""
    case_ids = {r.case_id for r in records}
    outputs: dict[str, dict[str, int]] = {}
    for pk, case_id, version in Output.objects.filter(case__eval_set=eval_set, case__case_id__in=case_ids).values_list(
        "pk", "case__case_id", "agent_version"
    ):
        outputs.setdefault(case_id, {})[version] = pk
    seen: dict[tuple[int, str, int], int | None] = {}
    resolved = []
    for r in records:
        versions = outputs.get(r.case_id)
        if not versions:
            problems.add(r.line, "case_id", f'no case "{r.case_id}" with an output in eval set "{eval_set.name}"')
            continue
        version = r.agent_version or default_agent_version
        if not version:
            if len(versions) > 1:
                problems.add(
                    r.line,
                    "agent_version",
                    f'is missing, and case "{r.case_id}" has outputs of {", ".join(sorted(versions))}: '
                    "give agent_version on the line or --agent-version",
                )
                continue
            version = next(iter(versions))
        if version not in versions:
            problems.add(
                r.line,
                "agent_version",
                f'case "{r.case_id}" has no output of agent version "{version}" (it has {", ".join(sorted(versions))})',
            )
            continue
        output_id = versions[version]
        r.agent_version = version
        key = (output_id, r.criterion, r.sample)
        if key in seen:
            earlier = f"line {seen[key]}" if seen[key] else "an earlier record"
            problems.add(r.line, "criterion", f"repeats the verdict of {earlier} for this output, criterion and sample")
            continue
        seen[key] = r.line
        resolved.append((output_id, r))
    return resolved


# What "the same verdict" means: every field the export writes (the names as the import reads them).
CONTENT_FIELDS = ("outcome", "evidence", "raw", "error_reason", "latency_ms", "tokens_in", "tokens_out", "cache_hit")
_STORED_FIELDS = ("outcome", "evidence", "raw_output", "error_reason", "latency_ms", "tokens_in", "tokens_out")


def _content(r: VerdictRecord) -> tuple:
    return (r.outcome, r.evidence, r.raw, _reason(r), r.latency_ms, r.tokens_in, r.tokens_out, r.cache_hit)


def _reason(r: VerdictRecord) -> str:
    if r.outcome != VerdictOutcome.ERROR:
        return ""
    return r.error_reason or IMPORTED_ERROR


def _stored(verdicts) -> dict[tuple[int, str, int], tuple[int, tuple]]:
    """(output, criterion key, sample) -> (run id, content) of the given verdicts."""
    rows = verdicts.values_list("output_id", "criterion__key", "sample", "run_id", *_STORED_FIELDS, "cache_hit")
    return {(o, c, s): (run, tuple(content)) for o, c, s, run, *content in rows.iterator(chunk_size=2000)}


def _compare(resolved, stored) -> tuple[list[tuple[int, VerdictRecord]], list[tuple[VerdictRecord, int, list[str]]]]:
    """The records not in `stored`, and (record, run, differing fields) for those there with other content."""
    new, conflicts = [], []
    for output_id, r in resolved:
        old = stored.get((output_id, r.criterion, r.sample))
        if old is None:
            new.append((output_id, r))
            continue
        differing = [n for n, a, b in zip(CONTENT_FIELDS, old[1], _content(r), strict=True) if a != b]
        if differing:
            conflicts.append((r, old[0], differing))
    return new, conflicts


def _plan(resolved, eval_set, rv, judge: JudgeConfig | None, judge_name: str, new_run: str, problems: Problems):
    """(records to write, the named run that already holds them); raises ImportFailed on a conflict."""
    if judge is None:
        return resolved, None
    if not new_run:
        stored = _stored(current_verdicts(eval_set=eval_set, rubric_version=rv, judge_config=judge))
        new, conflicts = _compare(resolved, stored)
        for r, run_id, differing in conflicts:
            problems.add(
                r.line,
                differing[0],
                f'case "{r.case_id}" ({r.agent_version}), criterion "{r.criterion}", sample {r.sample} already has '
                f'a verdict of judge "{judge_name}" (run {run_id}) with a different {", ".join(differing)}; an '
                "import never overwrites a verdict: to keep these verdicts as a run of their own that supersedes "
                "the earlier ones, import the file with --new-run LABEL (or under another --judge)",
            )
        problems.raise_if_any()
        return new, None
    run = JudgeRun.objects.filter(eval_set=eval_set, rubric_version=rv, judge_config=judge, label=new_run).first()
    if run is None:
        return resolved, None
    # The same file as the same named run again changes nothing; anything else would change that run.
    new, conflicts = _compare(resolved, _stored(run.verdicts.all()))
    if new or conflicts or run.verdicts.count() != len(resolved):
        raise problems.fatal(
            None,
            "new run",
            f'judge "{judge_name}" already has a run "{new_run}" (run {run.pk}) with other verdicts; a run does '
            "not change once imported: give this file another --new-run label",
        )
    return [], run


def _write(
    source: Source,
    eval_set: EvalSet,
    rv: RubricVersion,
    judge_name: str,
    resolved,
    new_run: str,
    problems: Problems,
    via: str,
) -> ImportReport:
    criteria = {c.key: c for c in rv.criteria.all()}
    with transaction.atomic():
        judge = JudgeConfig.objects.select_for_update().filter(name=judge_name).first()
        imported_only(judge, problems)  # again under the lock: the config may have been made since the first look
        todo, same_run = _plan(resolved, eval_set, rv, judge, judge_name, new_run, problems)
        if not todo:
            where = f' as run {same_run.pk} "{new_run}"' if same_run else ""
            return ImportReport(
                file=source.name,
                summary=f"{source.name}: all {plural(len(resolved), 'verdict')} are already there{where}; "
                "nothing imported.",
                counts={"records": len(resolved), "verdicts_created": 0, "verdicts_unchanged": len(resolved)},
            )
        created_judge = judge is None
        if judge is None:
            judge = JudgeConfig.objects.create(name=judge_name, backend=JudgeConfig.Backend.IMPORTED)
        now = timezone.now()
        run = JudgeRun.objects.create(
            eval_set=eval_set,
            rubric_version=rv,
            judge_config=judge,
            label=new_run,
            status=JudgeRun.Status.DONE,
            mode=JudgeRun.Mode.IMPORT,
            imported_via=via,
            source_name=source.name[-255:],
            started_at=now,
            finished_at=now,
            total_items=len({(o, r.sample) for o, r in todo}),
            expected_verdicts=len(todo),
        )
        transcripts = {
            pk: Transcript(input=input_, tool_calls=list(calls or []), response=response)
            for pk, input_, calls, response in Output.objects.filter(pk__in={o for o, _ in todo}).values_list(
                "pk", "case__input", "tool_calls", "response"
            )
        }
        rows = [
            _verdict(run, judge, rv, criteria[r.criterion], output_id, r, transcripts[output_id])
            for output_id, r in todo
        ]
        Verdict.objects.bulk_create(rows, batch_size=2000)
    by_outcome = {o: sum(1 for _, r in todo if r.outcome == o) for o in OUTCOMES}
    not_found = sum(1 for v in rows if v.evidence_found is False)
    unchanged = len(resolved) - len(todo)
    named = f' "{new_run}"' if new_run else ""
    summary = (
        f'{source.name} -> eval set "{eval_set.name}", {rv.ref}, judge "{judge.name}"'
        f"{' (created, backend imported)' if created_judge else ''}: {plural(len(rows), 'verdict')} imported as run "
        f"{run.pk}{named} ("
        + ", ".join(f"{o} {n}" for o, n in by_outcome.items())
        + ")"
        + (f"; {unchanged:,} already there." if unchanged else ".")
    )
    notes = []
    if not_found:
        notes.append(f"{plural(not_found, 'evidence quote')} not found verbatim in the transcript (flagged).")
    return ImportReport(
        file=source.name,
        summary=summary,
        counts={
            "records": len(resolved),
            "verdicts_created": len(rows),
            "verdicts_unchanged": unchanged,
            "run": run.pk,
        },
        notes=notes,
    )


def _verdict(run, judge, rv, criterion, output_id: int, r: VerdictRecord, transcript: Transcript) -> Verdict:
    is_error = r.outcome == VerdictOutcome.ERROR
    check = r.check_quote and not is_error and r.evidence.strip()
    return Verdict(
        run=run,
        output_id=output_id,
        rubric_version=rv,
        criterion=criterion,
        judge_config=judge,
        judge_config_hash=judge.content_hash,
        model_id=judge.model_id,
        sample=r.sample,
        outcome=r.outcome,
        evidence=r.evidence,
        evidence_found=transcript.contains(r.evidence) if check else None,
        error_kind=ErrorKind.IMPORTED if is_error else "",
        error_reason=_reason(r),
        raw_output=r.raw,
        latency_ms=r.latency_ms,
        tokens_in=r.tokens_in,
        tokens_out=r.tokens_out,
        cache_hit=r.cache_hit,
    )
