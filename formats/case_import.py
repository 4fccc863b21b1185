"""Importing cases and outputs: JSONL, CSV and Google ADK files, idempotently.

One record is one output of one case (a record without a response defines
only the case). A case or output that is already there with the same content
is skipped; with different content it is an error, because labels refer to
outputs and a silent overwrite would leave them describing something else.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

from django.db import IntegrityError, connection, transaction

from evals import record_fields as f
from evals.models import Case, EvalSet, Output, Workspace
from evals.problems import Problems, RecordError

from . import inspect_log, registry
from .case_records import (
    CASE_COMPARED,
    DEFAULT_AGENT_VERSION,
    DOCUMENT_KEYS,
    EVAL_SET_NAME_MAX,
    OUTPUT_COMPARED,
)
from .case_writers import BulkWriter, CopyWriter
from .import_summary import ImportReport, plural
from .planner import analyze_after_import
from .readers import Source, peek_first_line, refuse_unsupported_type
from .record_model import AGENT_VERSION_MAX


def detect_kind(source: Source, problems: Problems) -> str:
    """'jsonl', 'csv', 'adk_evalset' or 'adk_result', from the name first, then the content."""
    suffix = source.suffix
    if inspect_log.is_inspect_log(source):
        return "inspect"
    if suffix == ".evalset_result.json":
        return "adk_result"
    if suffix == ".evalset.json":
        return "adk_evalset"
    if suffix in (".yaml", ".yml"):
        raise problems.fatal(None, None, "this is a YAML file, as rubrics are; import a rubric with import_rubric")
    refuse_unsupported_type(source, problems, registry.FILE_TYPES[registry.CASES], "cases and outputs")
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
        if isinstance(value, dict) and not (value.keys() & DOCUMENT_KEYS):
            return "jsonl"  # a whole record on the first line: one record a line
        return "json_document"
    return "csv"


def iter_rows(
    kind: str, source: Source, problems: Problems, default_agent_version: str, agent_version_given: bool = True
) -> Iterator[tuple]:
    options = registry.ReadOptions(default_agent_version=default_agent_version, agent_version_given=agent_version_given)
    return registry.find(registry.CASES, kind).read(source, problems, options)


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
    workspace: Workspace,
    eval_set_name: str,
    default_agent_version: str | None = None,
    fast_path: bool | None = None,
) -> ImportReport:
    """Import a cases file into `workspace`'s eval set of that name (created there if missing); all or nothing.

    `default_agent_version` None: "default", except for an Inspect AI log, whose outputs take the model's name.
    """

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
            eval_set, created_set = EvalSet.objects.get_or_create(workspace=workspace, name=eval_set_name)
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
