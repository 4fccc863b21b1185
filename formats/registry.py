"""Every file format Icewater reads and writes, in one table: what its records are, the endings its files
have, its reader and its writer.

The imports (case_import, label_import, verdicts) tell a file's format apart and find its reader here, so
the format modules need not import each other: a reader imports only the record module of its kind
(case_records, label_records, verdict_records) and the shared readers (readers.py). Nothing a reader
imports imports this table back.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass

from evals.problems import Problems

from . import adk, case_records, export, inspect_log, inspect_scores, label_records, labelstudio, verdict_records
from .readers import Source

CASES, LABELS, VERDICTS, RUBRIC = "cases", "labels", "verdicts", "rubric"

# The endings a file of each kind may have (Source.suffix), in the order the refusal of another lists them.
FILE_TYPES = {
    CASES: (".jsonl", ".ndjson", ".csv", ".json", ".evalset.json", ".evalset_result.json", ".test.json", ".eval"),
    LABELS: (".jsonl", ".ndjson", ".csv", ".json"),
    VERDICTS: (".jsonl", ".ndjson", ".csv", ".json", ".evalset_result.json", ".eval"),
    RUBRIC: (".json", ".yaml", ".yml"),
}


@dataclass(frozen=True)
class ReadOptions:
    """What a reader may need besides the file: the import's options, the same for every format of a kind."""

    default_agent_version: str = ""
    agent_version_given: bool = True  # False: an Inspect AI log's outputs go under its model's name
    criteria: tuple[str, ...] = ()  # the rubric version's criterion keys (labels, verdicts)
    score_mapping: inspect_scores.ScoreMapping | None = None  # an Inspect AI log's scorers as criteria


Reader = Callable[[Source, Problems, ReadOptions], Iterator]


@dataclass(frozen=True)
class Format:
    kind: str  # what its records are: CASES (case_records.CaseRow, OutputRow), LABELS, VERDICTS
    name: str  # how an import names it once it has told the file apart
    suffixes: tuple[str, ...]  # the endings that name it (a file without one is told apart by its content)
    read: Reader
    write: Callable | None = None  # what export_data writes it with, where it writes this format


def _inspect_cases(source: Source, problems: Problems, o: ReadOptions) -> Iterator:
    return inspect_log.iter_rows(source, problems, o.default_agent_version if o.agent_version_given else None)


def _adk_cases(source: Source, problems: Problems, o: ReadOptions) -> Iterator:
    return adk.iter_rows("adk", source, problems, o.default_agent_version)


def _inspect_verdicts(source: Source, problems: Problems, o: ReadOptions) -> Iterator:
    mapping = o.score_mapping or inspect_scores.ScoreMapping()
    return inspect_scores.inspect_records(source, problems, list(o.criteria), mapping, o.default_agent_version)


FORMATS = (
    Format(
        CASES,
        "jsonl",
        (".jsonl", ".ndjson"),
        lambda s, p, o: case_records.iter_jsonl_rows(s, p, o.default_agent_version),
        export.write_jsonl,
    ),
    Format(
        CASES,
        "csv",
        (".csv",),
        lambda s, p, o: case_records.iter_csv_rows(s, p, o.default_agent_version),
        export.write_csv,
    ),
    Format(CASES, "adk_evalset", (".evalset.json", ".test.json"), _adk_cases, adk.write_evalset),
    Format(CASES, "adk_result", (".evalset_result.json",), _adk_cases),
    Format(CASES, "json_document", (".json",), _adk_cases),  # an ADK document under a plain .json name
    Format(CASES, "inspect", (".eval", ".json"), _inspect_cases),
    Format(
        LABELS,
        "jsonl",
        (".jsonl", ".ndjson"),
        lambda s, p, o: label_records.jsonl_records(s, p, o.default_agent_version, list(o.criteria)),
        export.write_jsonl,
    ),
    Format(
        LABELS,
        "csv",
        (".csv",),
        lambda s, p, o: label_records.csv_records(s, p, o.default_agent_version, list(o.criteria)),
        export.write_csv,
    ),
    Format(
        LABELS,
        "labelstudio",
        (".json",),
        lambda s, p, o: labelstudio.iter_records(s, p, o.default_agent_version, list(o.criteria)),
    ),
    Format(
        VERDICTS,
        "jsonl",
        (".jsonl", ".ndjson"),
        lambda s, p, o: verdict_records.jsonl_records(s, p, list(o.criteria)),
        export.write_jsonl,
    ),
    Format(
        VERDICTS,
        "csv",
        (".csv",),
        lambda s, p, o: verdict_records.csv_records(s, p, list(o.criteria)),
        export.write_csv,
    ),
    Format(
        VERDICTS,
        "adk_result",
        (".evalset_result.json",),
        lambda s, p, o: verdict_records.adk_records(s, p, list(o.criteria)),
    ),
    Format(VERDICTS, "inspect", (".eval", ".json"), _inspect_verdicts),
)
_BY_NAME = {(f.kind, f.name): f for f in FORMATS}


def find(kind: str, name: str) -> Format:
    """The format of `kind` an import told a file apart as; KeyError for a name the table does not hold."""
    return _BY_NAME[(kind, name)]
