"""What the API takes and answers, as ninja Schemas: the OpenAPI schema at /api/openapi.json is these, so a client
generated from it refuses what the server refuses (unknown fields, wrong types, empty names) and knows every
answer's fields."""

from __future__ import annotations

from ninja import Field, Schema
from pydantic import ConfigDict

from evals.validators import RUBRIC_REF_PATTERN


class GateIn(Schema):
    """The gate's body, the same as the command's flags. The three thresholds are optional and may only tighten
    the lead's policy (checked by the gate, which knows the policy)."""

    # Strict, as the server: a misspelt key or a number for a name is refused, not ignored or converted.
    model_config = ConfigDict(extra="forbid", strict=True, title="GateRequest")

    eval_set: str = Field(min_length=1, max_length=200, description="the release candidate's eval set")
    rubric: str = Field(min_length=3, max_length=310, pattern=RUBRIC_REF_PATTERN, description="NAME@VERSION")
    judge: str = Field(min_length=1, max_length=200, description="the judge config")
    agent_version: str | None = Field(default=None, max_length=200, description="gate only this agent version")
    min_pass_rate: float | None = Field(default=None, ge=0, le=1, description="only tightens the lead's")
    max_error_rate: float | None = Field(default=None, ge=0, le=1, description="only tightens the lead's")
    confidence: float | None = Field(default=None, gt=0, lt=1, description="only tightens the lead's")


class RunIn(Schema):
    model_config = ConfigDict(extra="forbid", strict=True)

    eval_set: str = Field(min_length=1, max_length=200)
    rubric: str = Field(min_length=3, max_length=310, pattern=RUBRIC_REF_PATTERN, description="NAME@VERSION")
    judge: str = Field(min_length=1, max_length=200)
    agent_version: str = Field("", max_length=200)


class RecordsIn(Schema):
    """A push as JSON: {"records": [...]}, nothing beside "records". Each record is one line of the JSONL format; the
    importer checks their fields and that there is one, with line numbers (line N is records[N-1]), as in a file."""

    model_config = ConfigDict(extra="forbid", title="Records")

    records: list[dict] = Field(min_length=1)


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


# -- what a 2xx answer holds (served as the domain's JSON, unchanged; tests/test_api_schema.py checks real answers
# against these) ------------------------------------------------------------------------------------------------


class ErrorReasonOut(Schema):
    kind: str
    reason: str
    count: int


class ProgressOut(Schema):
    """A judge run's progress (judging.run_progress.Progress), as `run_judge` shows it."""

    run_id: int
    status: str = Field(description="queued, running, done, failed or cancelled")
    total_items: int
    done_items: int
    expected_verdicts: int
    verdicts: int
    outcomes: dict[str, int] = Field(description="verdicts per outcome (PASS, FAIL, N/A, ERROR)")
    cache_hits: int
    evidence_not_found: int
    model_calls: int
    tokens_in: int
    tokens_out: int
    started_at: str | None = Field(description="ISO 8601")
    finished_at: str | None = Field(description="ISO 8601")
    error: str
    errors: list[ErrorReasonOut] = Field(description="the most frequent ERROR reasons")
    eta_seconds: float | None
    items_per_second: float | None
    percent: int
    finished: bool
    complete: bool


class ReportRowOut(Schema):
    """One criterion of the calibration report; the other keys are those of `calibration_report --format json`
    (docs/calibration.md)."""

    model_config = ConfigDict(extra="allow")

    criterion: str
    gold_policy: str
    n: int
    kappa: float | None
    kappa_ci: list[float] | None = Field(description="[low, high]")
    tpr: float | None
    tnr: float | None
    judge_error: int
    warnings: list[dict]


class ReportOut(Schema):
    """The calibration report, as `calibration_report --format json`: `criteria` and `probes`, or with
    by=agent_version `segments` (each with its `criteria`) and `mean_kappa`."""

    eval_set: str
    rubric_version: str
    judge_config: str
    judge_config_hash: str
    model_id: str
    agent_version: str | None = None
    computed_at: str = Field(description="ISO 8601")
    criteria: list[ReportRowOut] | None = Field(default=None, description="without by")
    probes: dict | None = Field(default=None, description="the newest complete probe run's figures, or null")
    by: str | None = Field(default=None, description="agent_version, when asked for")
    segments: list[dict] | None = Field(default=None, description="with by: one report per agent version")
    mean_kappa: dict[str, dict] | None = Field(default=None, description="with by: per criterion")
    split: str | None = Field(
        default=None, description="held_out when the judge's examples came from this eval set: figures on it only"
    )
    split_note: str | None = Field(default=None, description="what the split means here, with the looks so far")


class GateCriterionOut(Schema):
    """One gating criterion of the gate's decision."""

    criterion: str
    n: int
    passes: int
    errors: int
    pass_rate: float | None
    wilson_lower: float | None
    corrected_pass_rate: float | None
    corrected_lower: float | None
    corrected_upper: float | None
    judge_tpr: float | None
    judge_tnr: float | None
    calibration_eval_set: str | None
    calibration_n: int
    audit_lower: float | None = Field(description="an audit of the candidate: null unless the policy decides on one")
    audit_upper: float | None
    audit_estimate: float | None
    audit_decided: str | None = Field(description="PASS, FAIL or null (not yet)")
    audit_plan: int | None
    audit_n_labeled: int | None
    audit_N: int | None
    error_rate: float | None
    met: bool
    min_pass_rate: float
    max_error_rate: float
    confidence: float
    decide_on: str = Field(description="wilson_lower (observed), corrected_lower or audit")


class VerdictSourceOut(Schema):
    """A run whose verdicts the gate decided on."""

    run: int
    origin: str = Field(description="judge_run, import or push")
    verdicts: int
    mode: str
    label: str
    file: str
    finished_at: str | None
    token: dict[str, int | str] | None = Field(description='{"id", "project"} of the token that pushed it')


class GateOut(Schema):
    """The gate's decision, as `manage.py gate --format json`: read `passed`."""

    passed: bool
    binding_criterion: str | None
    met_count: int
    gating_count: int
    criteria: list[GateCriterionOut]
    provenance: list[VerdictSourceOut]


class GuidanceExampleIn(Schema):
    """One few-shot example: an excerpt of a development-split output, the gold outcome, a quote from the excerpt."""

    model_config = ConfigDict(extra="forbid", strict=True)

    output_id: int = Field(gt=0, description="the output the excerpt is cut from")
    input: str = Field("", max_length=4000, description="an excerpt of the case input (verbatim)")
    response: str = Field(min_length=1, max_length=4000, description="an excerpt of the response (verbatim)")
    outcome: str = Field(pattern="^(PASS|FAIL)$", description="the people's gold for this criterion")
    quote: str = Field(min_length=1, max_length=500, description="verbatim in the excerpt: what decides it")


class CriterionGuidanceIn(Schema):
    model_config = ConfigDict(extra="forbid", strict=True)

    instructions: str = Field("", max_length=4000, description="notes for the judge only, never the rubric")
    examples: list[GuidanceExampleIn] = Field(default_factory=list, max_length=8)


class DeriveIn(Schema):
    """A new version of `judge` with this guidance (docs/judging.md, "Improving a judge")."""

    model_config = ConfigDict(extra="forbid", strict=True)

    judge: str = Field(min_length=1, max_length=200, description="the version to derive from")
    rubric: str = Field(min_length=3, max_length=310, pattern=RUBRIC_REF_PATTERN, description="NAME@VERSION")
    criteria: dict[str, CriterionGuidanceIn] = Field(description="criterion key -> its guidance")


class GuidanceOut(Schema):
    """A judge config's guidance and where it stands among its versions."""

    judge: str
    family: str
    version: int
    derived_from: str | None
    content_hash: str
    rubric: str | None = Field(description="the rubric version the guidance speaks of")
    criteria: dict[str, dict] = Field(description="criterion key -> instructions, examples (with split, eval_set)")


class SplitOut(Schema):
    """The development and held-out split of an eval set's gold under a rubric version (ids, no figures)."""

    eval_set: str
    rubric_version: str
    seed: int
    fixed_at: str = Field(description="ISO 8601")
    fixed_by: str | None
    development: list[int]
    held_out: list[int]
    later_gold: list[int] = Field(description="outputs whose gold came after the split was fixed, dealt by the seed")
    held_out_looks: int
