"""What the API takes and answers, as ninja Schemas: the OpenAPI schema at /api/openapi.json is these, so a client
generated from it refuses what the server refuses (unknown fields, wrong types, empty names) and knows every
answer's fields."""

from __future__ import annotations

from ninja import Field, Schema
from pydantic import ConfigDict

RUBRIC_REF = r"^.+@[^@]+$"  # NAME@VERSION, as calibration.lookup.parse_rubric_ref reads it (the last @ splits)


class GateIn(Schema):
    """The gate's body, the same as the command's flags. The three thresholds are optional and may only tighten
    the lead's policy (checked by the gate, which knows the policy)."""

    # Strict, as the server: a misspelt key or a number for a name is refused, not ignored or converted.
    model_config = ConfigDict(extra="forbid", strict=True, title="GateRequest")

    eval_set: str = Field(min_length=1, max_length=200, description="the release candidate's eval set")
    rubric: str = Field(min_length=3, max_length=310, pattern=RUBRIC_REF, description="NAME@VERSION")
    judge: str = Field(min_length=1, max_length=200, description="the judge config")
    agent_version: str | None = Field(default=None, max_length=200, description="gate only this agent version")
    min_pass_rate: float | None = Field(default=None, ge=0, le=1, description="only tightens the lead's")
    max_error_rate: float | None = Field(default=None, ge=0, le=1, description="only tightens the lead's")
    confidence: float | None = Field(default=None, gt=0, lt=1, description="only tightens the lead's")


class RunIn(Schema):
    model_config = ConfigDict(extra="forbid", strict=True)

    eval_set: str = Field(min_length=1, max_length=200)
    rubric: str = Field(min_length=3, max_length=310, pattern=RUBRIC_REF, description="NAME@VERSION")
    judge: str = Field(min_length=1, max_length=200)
    agent_version: str = Field("", max_length=200)


class ProblemOut(Schema):
    line: int | None = Field(description="the record's line in a pushed file, else null")
    field: str | None = Field(description="where: a record's field, a path in the body, a query parameter")
    message: str
    text: str = Field(description="the problem as one line, as the command would print it")


class ErrorOut(Schema):
    """Every error answer: this, plus the details some answers add (truncated, limit_bytes, run_id, passed)."""

    model_config = ConfigDict(extra="allow")

    error: str = Field(description="what went wrong and what to do")
    problems: list[ProblemOut] = Field(description="the problems behind it; empty when the error says it all")


class PushOut(Schema):
    summary: str
    notes: list[str]
    counts: dict[str, int]
