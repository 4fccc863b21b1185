"""A label or gold label as one record, checked the same whichever file it came from; the JSONL and CSV readers.

These readers and the Label Studio reader (labelstudio.py) build their records
with `build_label`; nothing here imports them back.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from typing import Annotated, Any

from pydantic import AfterValidator, BaseModel, Field, TypeAdapter, ValidationInfo, model_validator

from evals import record_fields as f
from evals.models import HumanOutcome
from evals.problems import RecordError, suggest
from evals.transcript import MAX_QUOTES, NONE_QUOTE
from labeling.forms import EVIDENCE_MAX_CHARS, RATIONALE_MAX_CHARS

from .readers import iter_csv, iter_jsonl
from .record_model import RECORD_CONFIG, AgentVersion, CaseId, Ident, Text, context, refuse, validate

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


@dataclass(frozen=True, slots=True)
class _Context:
    criteria: list[str]
    from_csv: bool


def _outcome(value: Any) -> str:
    if value in OUTCOMES:
        return value
    if not isinstance(value, str) or not value.strip():
        raise refuse(f"is missing; use one of {', '.join(OUTCOMES)}")
    hint = ""
    upper = value.strip().upper().replace("/", "").replace(" ", "_")
    if upper in OUTCOMES:
        hint = f' (write it as "{upper}")'
    elif upper in ("NA", "N_A"):
        hint = ' (write it as "NOT_APPLICABLE")'
    elif upper in ("CANT_TELL", "CAN'T_TELL", "UNSURE", "SKIP"):
        hint = ' (for "can\'t tell" write "ABSTAIN")'
    raise refuse(f'"{value}" is not one of {", ".join(OUTCOMES)}{hint}')


def _known_criterion(criterion: str, info: ValidationInfo) -> str:
    criteria = context(info).criteria
    if criterion not in criteria:
        raise refuse(
            f'"{criterion}" is not a criterion of this rubric version{suggest(criterion, criteria)}; '
            f"its criteria: {', '.join(criteria)}"
        )
    return criterion


def _account_name(name: str) -> str:
    if not USERNAME_RE.match(name):
        raise refuse(f'"{name}" is not a valid account name (letters, digits and @ . + - _ only)')
    return name


def _bounded(field: str, limit: int, what: str) -> AfterValidator:
    """Evidence or rationale, no longer than the labeling and adjudication forms accept."""

    def check(text: str) -> str:
        if len(text) > limit:
            raise refuse(f"is {len(text):,} characters long; {what} at most {limit:,} (as in the app)")
        return text

    return AfterValidator(check)


Person = Annotated[Ident, Field(max_length=USERNAME_MAX), AfterValidator(_account_name)]
Quote = Annotated[
    Text, _bounded("evidence", EVIDENCE_MAX_CHARS, "a quote is the part of the transcript that decides it, in")
]
_quote = TypeAdapter(Quote, config=RECORD_CONFIG)


def _quotes(value: Any, info: ValidationInfo) -> tuple[str, tuple[str, ...]]:
    """Evidence as one quote (a string) or several (a list of strings; in CSV a JSON list of two or more):
    (the first, the rest)."""
    if context(info).from_csv and isinstance(value, str) and value.startswith("["):
        try:
            parsed = json.loads(value)
        except ValueError:
            parsed = None
        if isinstance(parsed, list) and len(parsed) > 1 and all(isinstance(q, str) for q in parsed):
            value = parsed
    if not isinstance(value, list):
        return _quote.validate_python(value), ()
    if not value:
        raise refuse('is an empty list; give one quote or more, or "NONE"')
    if len(value) > MAX_QUOTES:
        raise refuse(f"has {len(value)} quotes; at most {MAX_QUOTES} per label (as in the app)")
    for i, item in enumerate(value):
        if not isinstance(item, str) or not item.strip():
            raise refuse(f"must be a non-empty quote, not {f.json_type(item)}", at=f"evidence[{i}]")
    quotes = [_quote.validate_python(q) for q in value]
    if len(quotes) > 1 and NONE_QUOTE in (q.strip().upper() for q in quotes):
        raise refuse("NONE says there is nothing to quote; it cannot stand beside other quotes")
    return quotes[0], tuple(quotes[1:])


class LabelIn(BaseModel):
    """One label (an annotator's) or gold label (an adjudicator's), fields in the order their problems are
    reported; whichever file it came from."""

    model_config = RECORD_CONFIG

    criterion: Annotated[Ident, Field(max_length=100), AfterValidator(_known_criterion)]
    annotator: Person | None = None
    adjudicator: Person | None = None
    case_id: CaseId
    agent_version: AgentVersion = None
    outcome: Annotated[Any, AfterValidator(_outcome)] = Field(default=None, validate_default=True)
    evidence: Annotated[Any, AfterValidator(_quotes)] = None
    rationale: Annotated[Text, _bounded("rationale", RATIONALE_MAX_CHARS, "a rationale says why in")] = ""

    @model_validator(mode="after")
    def _label_or_gold(self) -> LabelIn:
        given = self.model_fields_set
        if self.annotator is not None and self.adjudicator is not None:
            raise refuse(
                "a line has an annotator (a label) or an adjudicator (a gold label), not both", at="adjudicator"
            )
        if self.annotator is None and self.adjudicator is None:
            raise refuse("is missing (or give an adjudicator for a gold label)", at="annotator")
        if self.adjudicator is not None and "evidence" in given:
            raise refuse("a gold line has a rationale, not evidence", at="evidence")
        if self.annotator is not None and "rationale" in given:
            raise refuse("a label has evidence, not a rationale (a rationale is for adjudicator lines)", at="rationale")
        return self


# Left out, in any file: null; in CSV also an empty cell (in JSON lines an empty name is refused as empty).
_EMPTY_CELL_IS_LEFT_OUT = frozenset({"annotator", "adjudicator", "agent_version", "evidence", "rationale"})


def build_label(
    values: Mapping[str, Any], line: int, default_agent_version: str, criteria: Iterable[str], from_csv: bool = False
) -> LabelRecord:
    given = {
        k: v for k, v in values.items() if v is not None and not (from_csv and v == "" and k in _EMPTY_CELL_IS_LEFT_OUT)
    }
    label = validate(LabelIn, given, _Context(list(criteria), from_csv))
    gold = label.adjudicator is not None
    text, more = (label.rationale, ()) if gold else (label.evidence or ("", ()))
    return LabelRecord(
        line=line,
        case_id=label.case_id,
        agent_version=label.agent_version or default_agent_version,
        criterion=label.criterion,
        person=label.adjudicator if gold else label.annotator,
        gold=gold,
        outcome=label.outcome,
        text=text,
        more=more,
    )


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
