"""A label or gold label as one record, checked the same whichever file it came from; the JSONL and CSV readers.

These readers and the Label Studio reader (labelstudio.py) build their records
with `build_label`; nothing here imports them back.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any

from evals import record_fields as f
from evals.models import HumanOutcome
from evals.problems import RecordError, suggest
from evals.transcript import MAX_QUOTES, NONE_QUOTE
from labeling.forms import EVIDENCE_MAX_CHARS, RATIONALE_MAX_CHARS

from .case_records import AGENT_VERSION_MAX, CASE_ID_MAX
from .readers import iter_csv, iter_jsonl

LABEL_FIELDS = frozenset(
    {"case_id", "agent_version", "criterion", "annotator", "adjudicator", "outcome", "evidence", "rationale"}
)
OUTCOMES = tuple(HumanOutcome.values)
# The pseudo-adjudicator of gold that is the annotators' agreement (derived, never stored).
AGREEMENT = "agreement"
# Django's UnicodeUsernameValidator and the username column size.
USERNAME_RE = re.compile(r"^[\w.@+-]+\Z")
USERNAME_MAX = 150


@dataclass(slots=True)
class LabelRecord:
    line: int
    case_id: str
    agent_version: str
    criterion: str
    person: str
    gold: bool
    outcome: str
    text: str  # evidence for a label (its first quote), rationale for a gold label
    more: tuple[str, ...] = ()  # a label's further quotes (evidence given as a list)

    @property
    def output_key(self) -> tuple[str, str]:
        return (self.case_id, self.agent_version)


def check_outcome(value: Any) -> str:
    if value in OUTCOMES:
        return value
    if not isinstance(value, str) or not value.strip():
        raise RecordError("outcome", f"is missing; use one of {', '.join(OUTCOMES)}")
    hint = ""
    upper = value.strip().upper().replace("/", "").replace(" ", "_")
    if upper in OUTCOMES:
        hint = f' (write it as "{upper}")'
    elif upper in ("NA", "N_A"):
        hint = ' (write it as "NOT_APPLICABLE")'
    elif upper in ("CANT_TELL", "CAN'T_TELL", "UNSURE", "SKIP"):
        hint = ' (for "can\'t tell" write "ABSTAIN")'
    raise RecordError("outcome", f'"{value}" is not one of {", ".join(OUTCOMES)}{hint}')


def check_person(value: Any, field: str) -> str:
    name = f.ident(value, field, USERNAME_MAX)
    if not USERNAME_RE.match(name):
        raise RecordError(field, f'"{name}" is not a valid account name (letters, digits and @ . + - _ only)')
    return name


def build_label(
    values: Mapping[str, Any], line: int, default_agent_version: str, criteria: Iterable[str], from_csv: bool = False
) -> LabelRecord:
    if not values.keys() <= LABEL_FIELDS:
        for key in values.keys() - LABEL_FIELDS:
            raise RecordError(
                key, f"unknown field{suggest(key, LABEL_FIELDS)}; known fields: {', '.join(sorted(LABEL_FIELDS))}"
            )

    def given(key: str) -> Any:
        value = values.get(key)
        return None if from_csv and value == "" else value

    criterion = f.ident(values.get("criterion"), "criterion", 100)
    if criterion not in criteria:
        raise RecordError(
            "criterion",
            f'"{criterion}" is not a criterion of this rubric version{suggest(criterion, criteria)}; '
            f"its criteria: {', '.join(criteria)}",
        )
    annotator, adjudicator = given("annotator"), given("adjudicator")
    if annotator is not None and adjudicator is not None:
        raise RecordError("adjudicator", "a line has an annotator (a label) or an adjudicator (a gold label), not both")
    if annotator is None and adjudicator is None:
        raise RecordError("annotator", "is missing (or give an adjudicator for a gold label)")
    gold = adjudicator is not None
    if gold and given("evidence") is not None:
        raise RecordError("evidence", "a gold line has a rationale, not evidence")
    if not gold and given("rationale") is not None:
        raise RecordError("rationale", "a label has evidence, not a rationale (a rationale is for adjudicator lines)")
    return LabelRecord(
        line=line,
        case_id=f.ident(values.get("case_id"), "case_id", CASE_ID_MAX),
        agent_version=f.ident(given("agent_version"), "agent_version", AGENT_VERSION_MAX, default_agent_version),
        criterion=criterion,
        person=check_person(adjudicator if gold else annotator, "adjudicator" if gold else "annotator"),
        gold=gold,
        outcome=check_outcome(values.get("outcome")),
        **(
            {"text": _bounded_text(given("rationale"), True)}
            if gold
            else dict(zip(("text", "more"), _quotes(given("evidence"), from_csv), strict=True))
        ),
    )


def _quotes(value: Any, from_csv: bool) -> tuple[str, tuple[str, ...]]:
    """Evidence as one quote (a string) or several (a list of strings; in CSV a JSON list of two or more):
    (the first, the rest)."""
    if from_csv and isinstance(value, str) and value.startswith("["):
        try:
            parsed = json.loads(value)
        except ValueError:
            parsed = None
        if isinstance(parsed, list) and len(parsed) > 1 and all(isinstance(q, str) for q in parsed):
            value = parsed
    if not isinstance(value, list):
        return _bounded_text(value, False), ()
    if not value:
        raise RecordError("evidence", 'is an empty list; give one quote or more, or "NONE"')
    if len(value) > MAX_QUOTES:
        raise RecordError("evidence", f"has {len(value)} quotes; at most {MAX_QUOTES} per label (as in the app)")
    quotes = []
    for i, item in enumerate(value):
        if not isinstance(item, str) or not item.strip():
            raise RecordError(f"evidence[{i}]", f"must be a non-empty quote, not {f.json_type(item)}")
        quotes.append(_bounded_text(item, False))
    if len(quotes) > 1 and NONE_QUOTE in (q.strip().upper() for q in quotes):
        raise RecordError("evidence", "NONE says there is nothing to quote; it cannot stand beside other quotes")
    return quotes[0], tuple(quotes[1:])


def _bounded_text(value: Any, gold: bool) -> str:
    """Evidence or rationale, no longer than the labeling and adjudication forms accept."""
    field, limit = ("rationale", RATIONALE_MAX_CHARS) if gold else ("evidence", EVIDENCE_MAX_CHARS)
    text = f.text(value, field)
    if len(text) > limit:
        what = "a rationale says why in" if gold else "a quote is the part of the transcript that decides it, in"
        raise RecordError(field, f"is {len(text):,} characters long; {what} at most {limit:,} (as in the app)")
    return text


# --- reading -----------------------------------------------------------------------------------------------


def _wrong_kind(keys: Iterable[str]) -> str | None:
    keys = set(keys)
    if "criterion" not in keys and keys & {"response", "input", "tool_calls"}:
        return "this looks like a cases file (it has input/response fields); import it with import_cases"
    if "criteria" in keys:
        return "this looks like a rubric (it has criteria); import it with import_rubric"
    return None


def jsonl_records(source, problems, default_agent_version, criteria) -> Iterator[LabelRecord]:
    first = True
    for line, value in iter_jsonl(source, problems):
        if not isinstance(value, dict):
            problems.add(line, None, f"expected a JSON object, found {f.json_type(value)}")
            continue
        if first:
            first = False
            wrong = _wrong_kind(value.keys())
            if wrong:
                raise problems.fatal(line, None, wrong)
        try:
            yield build_label(value, line, default_agent_version, criteria)
        except RecordError as exc:
            problems.add(line, exc.field, exc.message)


def csv_records(source, problems, default_agent_version, criteria) -> Iterator[LabelRecord]:
    def check_header(header: set[str], line: int) -> None:
        wrong = _wrong_kind(header)
        if wrong:
            raise problems.fatal(line, None, wrong)
        for name in sorted(header - LABEL_FIELDS):
            raise problems.fatal(line, name, f"unknown column{suggest(name, LABEL_FIELDS)}")
        for name in ("case_id", "criterion", "outcome"):
            if name not in header:
                raise problems.fatal(line, name, "the header has no such column, and it is required")
        if not header & {"annotator", "adjudicator"}:
            raise problems.fatal(line, "annotator", "the header needs an annotator or adjudicator column")

    for line, cells in iter_csv(source, problems, check_header):
        try:
            yield build_label(cells, line, default_agent_version, criteria, from_csv=True)
        except RecordError as exc:
            problems.add(line, exc.field, exc.message)
