"""What the API takes and answers, as ninja Schemas: the OpenAPI schema at /api/openapi.json is these, so a client
generated from it refuses what the server refuses (unknown fields, wrong types, empty names) and knows every
answer's fields."""

from __future__ import annotations

from typing import Annotated, Literal

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


# The error answers every operation declares (each adds those of its own, such as 409 or 413).
ERRORS = {400: ErrorOut, 401: ErrorOut, 403: ErrorOut, 404: ErrorOut, 405: ErrorOut, 500: ErrorOut}


class PushOut(Schema):
    summary: str
    notes: list[str]
    counts: dict[str, int]


# -- what a 2xx answer holds (served as the domain's JSON, unchanged; tests/api/test_api_schema.py checks real answers
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


# -- audit plans (issue 22; docs/api.md, Audit plans) -------------------------------------------------------------

# "Label these k next" and the forecast's k over the API: at least one, at most this many in one call.
MAX_AUDIT_K = 1000
SEED_MAX = 2**63 - 1  # the audit order keeps its seed in a PositiveBigIntegerField


class AuditPlanIn(Schema):
    """A new audit plan, the same as `audit_plan create`'s flags (the lead is the one who made the token)."""

    model_config = ConfigDict(extra="forbid", strict=True, title="AuditPlanRequest")

    eval_set: str = Field(min_length=1, max_length=200, description="the release candidate's eval set")
    rubric: str = Field(min_length=3, max_length=310, pattern=RUBRIC_REF_PATTERN, description="NAME@VERSION")
    judge: str = Field(min_length=1, max_length=200, description="the judge config the criterion gates with")
    criterion: str = Field(min_length=1, max_length=100, description="the gating criterion's key")
    agent_version: str | None = Field(default=None, max_length=200, description="audit only this agent version")
    seed: int | None = Field(default=None, ge=0, le=SEED_MAX, description="the order's seed (default: random)")
    min_pass_rate: float | None = Field(default=None, ge=0, le=1, description="default and lowest: the mark's")
    confidence: float | None = Field(default=None, gt=0, lt=1, description="default and lowest: the mark's")
    design: Literal["stratified", "uniform"] = Field(
        default="uniform",
        description="uniform (default): a prefix of one random order; stratified: the same releases, the test "
        "counted per side of the judge's verdict",
    )
    also_judges: list[Annotated[str, Field(min_length=1, max_length=200)]] = Field(
        default_factory=list,
        max_length=4,
        description="uniform only: extra judge configs whose vote share joins the jury predictor (each with verdicts "
        "of the criterion on the candidate; not the plan's own judge), frozen at the start",
    )


class AuditGroupIn(Schema):
    """A new audit of several gating criteria on one sample, as `audit_plan create --criterion A --criterion B`."""

    model_config = ConfigDict(extra="forbid", strict=True, title="AuditGroupRequest")

    eval_set: str = Field(min_length=1, max_length=200, description="the release candidate's eval set")
    rubric: str = Field(min_length=3, max_length=310, pattern=RUBRIC_REF_PATTERN, description="NAME@VERSION")
    judge: str = Field(min_length=1, max_length=200, description="the judge config the criteria gate with")
    criteria: list[str] = Field(min_length=1, max_length=50, description="the gating criteria's keys, each once")
    agent_version: str | None = Field(default=None, max_length=200, description="audit only this agent version")
    seed: int | None = Field(default=None, ge=0, le=SEED_MAX, description="the order's seed (default: random)")


class AuditGroupOut(Schema):
    """An audit group, its levels fixed at the start, and its shared decision as a worker last stored it (null
    until the first is computed), as `audit_plan show --group ID --format json` prints it."""

    group: int
    eval_set: str
    judge: str
    agent_version: str
    k: int
    confidence: float
    alpha_pass: float = Field(description="each criterion's PASS test's level: alpha = (1 - confidence) / 2")
    alpha_fail: float = Field(description="each criterion's FAIL test's level: alpha / k")
    plans: dict[str, int] = Field(description="criterion key -> its plan's id")
    created_by: str
    created_at: str
    closed_at: str | None
    shared: dict | None = Field(description="the release's decision and a row per criterion (docs/calibration.md)")
    release: str | None = Field(description='e.g. "FAIL came from next_step at label 20: ..."')
    criterion_forecasts: dict[str, dict | None] = Field(description="each open criterion's own forecast")
    freshness: dict


class AuditNextIn(Schema):
    """'Label these k next': the queue may hand out the next k outputs of the plan's order."""

    model_config = ConfigDict(extra="forbid", strict=True, title="AuditNextRequest")

    k: int = Field(default=25, ge=1, le=MAX_AUDIT_K, description="how many more outputs (default 25)")


class AuditForecastOut(Schema):
    """A Monte Carlo forecast from the posterior predictive of the labels so far: a forecast, not a promise."""

    k: int = Field(description="the next k labels the chances are about")
    p_decided: float = Field(description="the chance of a decision within the next k labels")
    p_pass: float
    p_fail: float
    expected_labels: float = Field(description="more labels to a decision, mean over the simulations")
    p90_labels: int = Field(description="... and its 90th percentile")
    n_sims: int


class AuditKeptOut(Schema):
    """An audit plan's decision, kept when first reached (calibration.audits.kept), against today's gold."""

    decided: str = Field(description="PASS or FAIL: the plan's decision from then on")
    decided_by: str = Field(description="exact or test")
    at_label: int = Field(description="the label of the plan's order it came at")
    n_labeled: int = Field(description="the labeled prefix read when it was kept")
    decided_at: str = Field(description="ISO 8601: when it was kept")
    min_pass_rate: float = Field(description="the plan's thresholds and design it was decided on")
    confidence: float
    design: str
    figures: dict = Field(description="lower, upper, estimate, n_labeled, n_gold, n_pending, n_not_applicable, N")
    gold_digest: str = Field(description="sha256 of the labeled outputs' gold then, sorted by output id")
    gold_changed: int = Field(description="outputs of that prefix whose gold differs today (pending ones settled too)")
    reads_now: str | None = Field(description="today's gold at the plan's thresholds: PASS, FAIL or null (undecided)")
    differs: bool = Field(description="reads_now is not the kept decision: the gate does not decide on the plan")
    words: str = Field(description='"decided PASS at label 20 on 4 Dec 2026; 2 gold labels changed since; ..."')


class AuditHeadingOut(Schema):
    """Which side an undecided audit is heading for (calibration/stats/audit_heading.py; docs/calibration.md)."""

    side: str | None = Field(description="PASS or FAIL; null while too early to tell")
    decided: bool = Field(description="the audit has decided: side is its decision")
    confidence: float = Field(description="read at this confidence: a wrong heading in at most (1 - it) / 2 of audits")
    in_words: str


class AuditFreshnessOut(Schema):
    """How fresh an audit plan's stored figures are (calibration/audits/stored_figures.py, issue 37)."""

    current: bool = Field(description="computed from every gold or label change seen so far")
    as_of_change: int = Field(description="the change the figures are of (a count that only grows)")
    changes_seen: int
    n_gold: int = Field(description="settled gold items the figures read")
    computed_at: str | None
    duration_s: float | None = Field(description="the last computation's time in the worker")
    words: str = Field(description='e.g. "as of gold change 212 (180 gold labels), 4 s ago; updating…"')


class AuditFiguresPendingOut(Schema):
    """An audit plan whose first figures a worker is still computing."""

    plan: int
    computed: bool = Field(description="false: the first figures are not computed yet")
    freshness: AuditFreshnessOut


class AuditSignalOut(Schema):
    name: str = Field(description="the judge config")
    role: str = Field(description="the plan's judge, or an extra judge config")
    reads: str = Field(description="vote share (of its samples, frozen at the start) or verdict (an older plan)")
    samples: int | None = Field(description="its usable samples on the candidate at the start; null for a verdict")
    n: int = Field(description="settled PASS/FAIL gold where the signal exists: what the correlation is read on")
    correlation: float | None = Field(description="Pearson's r with that gold (phi for a verdict); null if undefined")
    weight: float = Field(description="its slope in the jury on the gold so far, in [0, 1]")
    missing: int = Field(description="outputs without the signal (they get its mean over the rest)")


class AuditJuryOut(Schema):
    correlation: float | None = Field(description="R: the combined score's correlation with gold so far")
    n: int


class AuditPredictorOut(Schema):
    kind: str = Field(description='"jury" (vote shares, new uniform plans) or "verdict" (one bit; stratified, older)')
    in_words: str
    signals: list[AuditSignalOut] = Field(description="empty for a stratified plan")
    jury: AuditJuryOut | None


class AuditFiguresOut(Schema):
    """An audit plan's figures now, as `audit_plan show PLAN --format json` prints them (calibration.audits.figures)."""

    plan: int
    criterion: str
    eval_set: str
    rubric: str
    judge: str
    agent_version: str = Field(description='"" for every output of the eval set')
    design: str = Field(description='"stratified" (by the judge\'s verdict) or "uniform" (one random order)')
    seed: int
    min_pass_rate: float
    confidence: float
    order: list[str] = Field(description="case ids of the population, in the plan's order")
    N: int
    strata_sizes: list[int] | None = Field(
        description="stratified: the outputs the judge passed and the rest (frozen when the plan started); else null"
    )
    strata_labeled: list[int] | None = Field(description="stratified: the labels in each so far; else null")
    released: int = Field(description="outputs the labeling queue may hand out for the plan")
    n_labeled: int = Field(description="the labeled prefix of the order, pending gold included")
    n_gold: int
    n_pending: int = Field(
        description="outputs of the labeled prefix with no gold yet or gold Can't tell, counted against either decision"
    )
    n_gold_cant_tell: int = Field(description="of n_pending: gold Can't tell (settled, no pass or fail)")
    cant_tell_outputs: list[int] = Field(
        description="their output ids, in the order: each counts against either decision until a reviewer overrules it"
    )
    n_not_applicable: int = Field(description="gold N/A: outside the pass rate, passes / (passes + fails)")
    estimate: float | None = Field(description="the PPI++ estimate of the pass rate (for reading, not deciding)")
    lower: float = Field(description="the anytime-valid interval, what the decision rests on")
    upper: float
    decided: str | None = Field(description="PASS, FAIL or null (not yet): the kept decision once kept")
    decided_at: int | None = Field(description="the label the decision came at")
    decided_by: str | None = Field(description="exact (the labels alone) or test (the betting test)")
    min_gold: int = Field(description="no decision by the test before this many gold items")
    forecast: AuditForecastOut
    labels_saved: int = Field(description="outputs not labeled (so far, if undecided)")
    outputs_outside_order: int = Field(description="outputs made after the order: the audit does not cover them")
    saved_share: float | None = Field(description="labels_saved / N")
    freshness: AuditFreshnessOut = Field(description="the figures are a worker's, stored: how fresh they are")
    reads_now: str | None = Field(description="today's gold read afresh: PASS, FAIL or null (undecided)")
    kept: AuditKeptOut | None = Field(description="the decision kept when first reached; null before it")
    heading: AuditHeadingOut | None = Field(
        description="which side the audit is heading for before it decides; null in figures stored before it existed"
    )
    predictor: AuditPredictorOut | None = Field(
        description="what the tests read beside gold, with each signal's correlation with gold so far and its weight; "
        "null in figures stored before it existed"
    )


class AuditPlanSummaryOut(Schema):
    """One audit plan as a list shows it (its figures: GET /api/audit-plans/{plan_id})."""

    plan: int
    eval_set: str
    criterion: str
    rubric: str
    judge: str
    agent_version: str
    design: str = Field(description='"uniform" or "stratified"')
    predictor: str = Field(description='"jury" or "verdict"')
    also_judges: list[str] = Field(description="the extra judge configs of a jury plan, frozen at its start")
    min_pass_rate: float
    confidence: float
    created_by: str
    created_at: str = Field(description="ISO 8601")
    closed_at: str | None = Field(description="ISO 8601; null while open")


class AuditPlanListOut(Schema):
    eval_set: str
    plans: list[AuditPlanSummaryOut] = Field(description="newest first, open and closed")
    open: int = Field(description="how many of them are open")


class JuryPriceOut(Schema):
    """The price of gating with a jury: a uniform audit reading other judge configs' verdicts beside the judge's."""

    configs: list[str] = Field(description="the other judge configs of the workspace in the jury, beside this judge")
    R: float = Field(description="the jury's correlation with gold on this calibration, cross-validated (10 folds)")
    n: int = Field(description="the calibration items R was measured on")
    labels: dict[str, int] = Field(description="labels per decision by margin, on the worse side, with the jury")
    labels_by_side: dict[str, dict[str, int]] = Field(description="the same on each side of the minimum")


class GatingPriceOut(Schema):
    """An estimate of the labels an audit takes per release decision, for a candidate of N outputs."""

    criterion: str
    phi: float | None = Field(description="the judge-gold correlation on this calibration (0 where undefined)")
    predictor: str | None = Field(
        default=None,
        description='what phi is of: "vote share" (the share of PASS among the judge\'s repeated samples, what a '
        "uniform audit reads); absent: the verdict's PASS/FAIL",
    )
    pass_rate: float | None = Field(description="the calibration's gold pass rate")
    N: int = Field(
        description="the candidate's size: this eval set's outputs the judge graded, or, on the calibration a mark "
        "relied on, the newest candidate gated or audited with this judge (see candidate)"
    )
    candidate: str = Field(description="which candidate N is the size of, in words")
    minimum: float | None = Field(default=None, description="the minimum pass rate priced at (the mark's, else 0.9)")
    labels: dict[str, int] | None = Field(
        description='labels per decision by margin from the minimum ("0.10", "0.05"), on the worse side of it'
    )
    labels_by_side: dict[str, dict[str, int]] | None = Field(
        default=None, description='the same on each side: "PASS" (the candidate above the minimum), "FAIL" (below)'
    )
    in_words: str
    jury: JuryPriceOut | None = Field(
        default=None, description="where other judge configs graded this calibration: the price with them as a jury"
    )


class AuditPlanInReportOut(Schema):
    """An audit plan on the report's eval set (calibration.audits.figures.AuditFigures.summary)."""

    plan: int
    criterion: str
    judge: str
    agent_version: str
    open: bool
    min_pass_rate: float
    confidence: float
    n_labeled: int
    N: int
    estimate: float | None
    interval: list[float] = Field(description="[lower, upper], anytime-valid")
    decided: str | None = Field(description="PASS, FAIL or null (not yet)")
    forecast: AuditForecastOut


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
    gating_price: list[GatingPriceOut] | None = Field(
        default=None, description="without by: the price of gating each criterion (an estimate; docs/calibration.md)"
    )
    audit_plans: list[AuditPlanInReportOut] | None = Field(
        default=None, description="without by, where the eval set has audit plans: each open one and the latest closed"
    )
    transport: list[dict] | None = Field(
        default=None,
        description="without by, on a candidate: per gating criterion marked on another eval set, the transport test "
        "of the judge's TPR and TNR here against that calibration's (Fisher's exact test per rate, with its power; "
        "docs/calibration.md)",
    )
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
    judge_tpr_ci: list[float] | None = Field(description="[low, high], 95% Wilson, on the calibration set")
    judge_tnr_ci: list[float] | None
    candidate_gold_n: int | None = Field(
        description="the transport test, where the mark holds calibration counts (else null): outputs of the "
        "candidate with gold PASS/FAIL and a PASS/FAIL verdict"
    )
    candidate_tpr: float | None = Field(description="the judge's TPR on the candidate's gold")
    candidate_tpr_ci: list[float] | None = Field(description="[low, high], 95% Wilson")
    candidate_tnr: float | None = Field(description="the judge's TNR on the candidate's gold")
    candidate_tnr_ci: list[float] | None = Field(description="[low, high], 95% Wilson")
    transport_warning: str | None = Field(
        description="set when Fisher's exact test finds the candidate's TPR or TNR moved from the calibration's (each "
        "rate at half the level 1 - confidence): the corrected bound borrows the calibration's rates and does not "
        "hold on the candidate"
    )
    corrected_assumes: str = Field(description="the corrected bound's assumption, in words")
    candidate_gold: dict | None = Field(
        description="what the candidate's own gold says of its pass rate: passes, fails, unknown (no decisive gold), "
        "sample (census, audit order, or not known to be random), lower and upper (exact, or the audit's), "
        "worst_case_upper (every output without gold passing), in_words; null without gold PASS/FAIL"
    )
    refuted_by_gold: str | None = Field(description="why the candidate's own gold makes this criterion not met")
    held_back: str | None = Field(description="why the candidate's gold keeps the gate from passing on it (exit 2)")
    notes: list[str] = Field(
        description="what the candidate's gold says of this criterion, in words: refuted, held back, the gold's "
        "bound, the transport test; and, deciding on the corrected bound with no gold, that its assumption is "
        "unchecked"
    )
    transport: dict | None = Field(
        description="the transport test in full: level, per rate (tpr, tnr) the counts, Fisher's p, moved, and the "
        "power to catch a drop of 0.10 and 0.05; warning; too_little_gold"
    )
    audit_lower: float | None = Field(description="an audit of the candidate: null unless the policy decides on one")
    audit_upper: float | None
    audit_estimate: float | None
    audit_decided: str | None = Field(description="PASS, FAIL or null (not yet)")
    audit_plan: int | None
    audit_n_labeled: int | None
    audit_N: int | None
    audit_design: str | None = Field(default=None, description='the audit\'s design: "uniform" or "stratified"')
    audit_predictor: str | None = Field(
        default=None, description='what the audit\'s tests read beside gold: "jury" (vote shares) or "verdict"'
    )
    audit_in_words: str | None = Field(
        default=None,
        description="the audit's design and predictor in a lead's words, naming a jury's extra judge configs, e.g. "
        '"uniform audit, predictor: the judge\'s vote share + 1 other config (instrument)"',
    )
    audit_k: int | None = Field(
        description="how many of the candidate's gating criteria are decided by audits (null without an audit): "
        "each one's FAIL side runs at alpha / k"
    )
    audit_alpha_pass: float | None = Field(description="the level the audit's PASS is read at: (1 - confidence) / 2")
    audit_alpha_fail: float | None = Field(description="the level the audit's FAIL is read at: alpha / audit_k")
    error_rate: float | None
    met: bool
    min_pass_rate: float
    max_error_rate: float
    confidence: float
    decide_on: str = Field(
        description="audit (the default for marks made since issue 40), corrected_lower (assumes the judge's error "
        "rates on the calibration set hold here) or wilson_lower (observed)"
    )


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
    """The gate's decision, as `manage.py gate --format json`: read `passed` (null with a 409 where the candidate's own
    gold holds the gate back; `error` says why and the criteria come with it)."""

    passed: bool | None
    binding_criterion: str | None
    met_count: int
    gating_count: int
    failed_criteria: list[str] = Field(
        default_factory=list, description="the criteria that failed the release (not met), in rubric order"
    )
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
