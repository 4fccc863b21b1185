"""Records as pydantic models: the types, lengths and fields pydantic checks, in the words our imports use.

A reader hands one parsed JSON object (or CSV row) to `validate`; pydantic checks types, lengths, required and
unknown fields, and `validate` turns its first error into the RecordError an import reports today (the caller
adds the line). Parsing, line numbers and the duplicate-key and depth guards stay in readers.py and
record_fields.py: pydantic only sees values they let through.
"""

from __future__ import annotations

import json
from typing import Annotated, Any

from pydantic import (
    AfterValidator,
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    Strict,
    ValidationError,
    ValidationInfo,
    ValidatorFunctionWrapHandler,
    WrapValidator,
)
from pydantic_core import ErrorDetails, PydanticCustomError

from evals import record_fields as f
from evals.problems import RecordError, suggest
from evals.validators import name_problem

# Column sizes of the models in evals (checked here so SQLite refuses what PostgreSQL would).
CASE_ID_MAX = 300
AGENT_VERSION_MAX = 200

# One shape for every record: unknown fields are errors (a misspelt optional field must not be dropped), and
# nothing is coerced ("1" is not a number, 1 is not true).
RECORD_CONFIG = ConfigDict(extra="forbid", strict=True, frozen=True)


def refuse(message: str, at: str | None = None) -> PydanticCustomError:
    """Our own words for a value pydantic cannot judge alone (a NUL character, a criterion of this rubric);
    `at` names the field when it is not the one being validated (a rule across fields, an item of a list)."""
    return PydanticCustomError("icewater", "{message}", {"message": message, "at": at})


def _no_nul(value: str) -> str:
    if "\x00" in value:
        raise refuse("contains a NUL character (\\u0000), which cannot be stored")
    return value


def _one_line(value: str) -> str:
    problem = name_problem(value)  # line breaks, tabs, invisible characters: evals/validators.py
    if problem:
        raise refuse(problem)
    return value


def _number_as_text(value: Any) -> Any:
    return str(value) if isinstance(value, int) and not isinstance(value, bool) else value


# An identifier such as a case_id: non-empty text (a whole number is accepted), one line of visible characters.
# A field adds its column's size: Annotated[Ident, Field(max_length=CASE_ID_MAX)].
Ident = Annotated[
    str,
    BeforeValidator(_number_as_text),
    Field(min_length=1),
    AfterValidator(_no_nul),
    AfterValidator(_one_line),
]


CaseId = Annotated[Ident, Field(max_length=CASE_ID_MAX)]
# None or "": the default (the case's only output, or the one the import names)
AgentVersion = Annotated[
    Annotated[Ident, Field(max_length=AGENT_VERSION_MAX)] | None, BeforeValidator(lambda v: None if v == "" else v)
]  # "" and null mean "the default"; 0, [] or {} are refused as the wrong type, as the hand checks did


def context(info: ValidationInfo) -> Any:
    """What the reader passed to validate() (a rubric's criteria, whether the record is a CSV row)."""
    return info.context


def _stored_json(value: Any) -> str:
    try:
        return f.stored_json(value, "")
    except RecordError as exc:
        raise refuse(exc.message) from None


Text = Annotated[str, AfterValidator(_no_nul)]
# Any JSON value: text as it is, anything else as its canonical JSON (what the database stores).
TextOrJson = Annotated[Any, AfterValidator(lambda v: _no_nul(v) if isinstance(v, str) else _stored_json(v))]


def whole_number(maximum: int) -> WrapValidator:
    """A whole number from 0 to maximum (true/false and 1.0 are not whole numbers), in our words."""

    def in_words(value: Any, handler: ValidatorFunctionWrapHandler) -> int:
        try:
            return handler(value)
        except ValidationError:
            raise refuse(f"must be a whole number from 0 to {maximum}, not {json.dumps(value)}") from None

    return WrapValidator(in_words)


MAX_INT32 = 2**31 - 1  # PostgreSQL integer
Count = Annotated[int, Strict(), Field(ge=0, le=MAX_INT32), whole_number(MAX_INT32)]


def validate(model: type[BaseModel], value: dict, context: Any = None) -> Any:
    """The record, or RecordError for the first problem, in the order our fields are declared (unknown fields
    first: a misspelt name explains the problems after it)."""
    try:
        return model.model_validate(value, context=context)
    except ValidationError as exc:
        errors = exc.errors(include_url=False)
        first = next((e for e in errors if e["type"] == "extra_forbidden"), errors[0])
        raise RecordError(_field(first), _message(model, first)) from None


def _field(error: ErrorDetails) -> str | None:
    at = (error.get("ctx") or {}).get("at")
    return at or f.format_path(list(error["loc"])) or None


def _message(model: type[BaseModel], error: ErrorDetails) -> str:
    kind, value, ctx = error["type"], error["input"], error.get("ctx") or {}
    if kind == "icewater":
        return ctx["message"]
    if kind == "missing" or (value is None and kind.endswith("_type")):
        return "is missing"
    if kind == "extra_forbidden":
        known = frozenset(model.model_fields)
        return f"unknown field{suggest(str(error['loc'][-1]), known)}; known fields: {', '.join(sorted(known))}"
    if kind == "string_type":
        return f"must be text, not {f.json_type(value)}"
    if kind in ("string_too_short", "too_short"):
        return "is empty"
    if kind in ("string_too_long", "too_long"):
        return f"is longer than {ctx['max_length']} characters"
    if kind == "bool_type":
        return f"must be true or false, not {json.dumps(value)}"
    return error["msg"]  # a type no record declares today: pydantic's own words
