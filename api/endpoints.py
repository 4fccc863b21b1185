"""The JSON API under /api/ (django-ninja): OpenAPI schema at /api/openapi.json, Swagger UI at /api/docs.

Every endpoint calls the same domain function as the command line (the importers, the judge
runner, the calibration report, the gate), so the API has the same checks, atomicity and
messages. Every JSON body and query is read with the import files' rules (evals/json_body.py:
repeated keys, nesting, NUL, lone surrogates), and every error is JSON in one shape,
{"error": message, "problems": [...], ...details} (evals.problems.error_body), with the status
that fits (400 bad input, 401 no usable token, 403 outside the token's scope, 404 unknown name or
address, never followed by the names that exist, 405, 409 the gate cannot decide, 413 too large,
500 logged); docs/api.md lists them.
"""

from __future__ import annotations

import dataclasses
from typing import Annotated

from csp.decorators import csp_update
from django.core.exceptions import RequestDataTooBig
from django.db import transaction
from django.http import Http404, HttpRequest, HttpResponse, JsonResponse
from ninja import Field, NinjaAPI, Query, Schema, Status
from ninja.errors import AuthenticationError, HttpError, ValidationError
from ninja.parser import Parser

from calibration.audits.figures import plan_figures
from calibration.audits.plans import AuditPlanError, close_plan, plan_record, release_plan_next, start_plan
from calibration.gate.answers import GateOutcome
from calibration.gate.release_gate import gate_and_record
from calibration.gate.request import GateRequest
from calibration.models import AuditPlan, GateResult
from calibration.report.compose import calibration_report, segmented_report
from calibration.report.files import to_json
from calibration.stats.policy import PolicyRefused, Tightening
from calibration.workbench.holdout_looks import count_report_look
from evals.access import has_role
from evals.json_body import BodyRefused, check_query, parse_json_body, schema_problems
from evals.lookup import eval_set_named
from evals.models import EvalSet, Output, Role, RubricVersion, User
from evals.problems import Problem
from evals.validators import RUBRIC_REF_PATTERN, UnknownName
from formats.case_import import import_cases
from formats.inspect_scores import ScoreMapping
from formats.verdicts import import_verdicts
from judging import runner
from judging.backends import Misconfigured
from judging.gold_splits import describe, split_for
from judging.guidance import GuidanceRefused, as_document, derive_config
from judging.judge_lookup import judge_named
from judging.models import JudgeConfig, JudgeRun
from judging.run_progress import Progress, progress_of

from .answers import LENGTH_REQUIRED, bad_parameters, error, refused_body, server_error, too_large, unread_chunked_body
from .auth import NO_TOKEN, ApiError, TokenAuth, TokenHttpRequest, check_judge, check_scope
from .models import TokenScope as Scope
from .models import VerdictPush
from .pushes import body_source, run_import
from .schemas import (
    MAX_AUDIT_K,
    AuditFiguresOut,
    AuditNextIn,
    AuditPlanIn,
    AuditPlanListOut,
    AuditPlanSummaryOut,
    DeriveIn,
    ErrorOut,
    GateIn,
    GateOut,
    GuidanceOut,
    ProgressOut,
    PushOut,
    RecordsIn,
    ReportOut,
    RunIn,
    SplitOut,
)

# Swagger UI's stylesheet draws its icons as data: SVG images; the site's policy allows images from 'self' only.
# An image cannot run anything, so the docs page alone may also show data: images (scripts stay 'self' only).
DOCS_CSP = csp_update({"img-src": ["data:"]})


NOT_AN_OBJECT = "must be a JSON object, not a list or a value"


class BodyParser(Parser):
    """ninja's parser with the import files' rules for JSON bodies, and no NUL in query parameters.

    ninja turns any error of parse_body into HttpError 400 "Cannot parse request body" raised from it; the
    handler below answers with the BodyRefused behind it, which says what and where.
    """

    def parse_body(self, request: HttpRequest):
        return parse_json_body(request.body)

    def parse_querydict(self, data, list_fields, request):
        check_query(data.lists())
        return super().parse_querydict(data, list_fields, request)


class BadParameters(ValidationError):
    """ninja's ValidationError, knowing the Schema of the body it was about (None: the query or path)."""

    def __init__(self, errors: list[dict], body_schema: type[Schema] | None) -> None:
        super().__init__(errors)
        self.body_schema = body_schema


class IcewaterApi(NinjaAPI):
    def validation_error_from_error_contexts(self, error_contexts) -> ValidationError:
        """As ninja's, with the body's Schema, so that a misspelt field is answered with the fields it has."""
        found = super().validation_error_from_error_contexts(error_contexts)
        schemas = [
            field.annotation
            for context in error_contexts
            for field in context.model.model_fields.values()
            if isinstance(field.annotation, type) and issubclass(field.annotation, Schema)
        ]
        return BadParameters(found.errors, schemas[0] if schemas else None)


api = IcewaterApi(
    title="Icewater API",
    version="1",
    description="Push outputs and verdicts, run judges, read calibration reports and ask the release gate. "
    "Authenticate with 'Authorization: Bearer <token>' (a token a lead made on the gate page, with the endpoint's "
    "scope); see docs/api.md.",
    urls_namespace="api",
    docs_decorator=DOCS_CSP,
    parser=BodyParser(),
)
PUSH, JUDGE, REPORT, GATE, AUDIT, GUIDANCE = (
    TokenAuth(s) for s in (Scope.PUSH, Scope.JUDGE, Scope.REPORT, Scope.GATE, Scope.AUDIT, Scope.GUIDANCE)
)
# Names in query parameters: never empty (the schema says so, as the server does), at most a name's length.
EvalSetName = Annotated[str, Field(min_length=1, max_length=200)]
RubricRef = Annotated[str, Field(min_length=3, max_length=310, pattern=RUBRIC_REF_PATTERN, description="NAME@VERSION")]
JudgeName = Annotated[str, Field(min_length=1, max_length=200)]


# -- errors -----------------------------------------------------------------------------------------------


@api.exception_handler(ApiError)
def _api_error(request: HttpRequest, exc: ApiError) -> JsonResponse:
    return error(exc.status, exc.message, **exc.extra)


@api.exception_handler(AuthenticationError)
def _no_token(request: HttpRequest, exc: AuthenticationError) -> JsonResponse:
    return error(401, NO_TOKEN)


@api.exception_handler(ValidationError)
def _bad_input(request: HttpRequest, exc: ValidationError) -> JsonResponse:
    """ninja's checks of parameters and JSON bodies against their Schemas, in our words."""
    body_schema = getattr(exc, "body_schema", None)
    if body_schema is not None and not request.body:  # ninja validates an empty body without reading it
        if unread_chunked_body(request):
            return error(411, LENGTH_REQUIRED)
        try:
            parse_json_body(request.body)
        except BodyRefused as refused:  # "the body is empty", as for any body the parser refuses
            return refused_body(refused.problem)
    problems = schema_problems(exc.errors, known=body_schema.model_fields if body_schema else ())
    if body_schema is not GateIn:
        return error(400, bad_parameters(problems), problems)
    # The gate's answers from before it was an operation here, kept for its clients: a body that is not an object
    # is refused as unreadable, and bad parameters come with "fields", the old shape (docs/api.md, Errors).
    if any(len(e["loc"]) == 2 and e["loc"][0] == "body" for e in exc.errors):  # the whole body, not a field
        return refused_body(Problem("body", None, None, NOT_AN_OBJECT))
    return error(400, bad_parameters(problems), problems, fields={p.field or "body": [p.message] for p in problems})


@api.exception_handler(BodyRefused)
def _bad_query(request: HttpRequest, exc: BodyRefused) -> JsonResponse:
    return error(400, f"the query was refused: {exc.problem}", [exc.problem])


@api.exception_handler(HttpError)
def _http_error(request: HttpRequest, exc: HttpError) -> JsonResponse:
    if isinstance(exc.__cause__, BodyRefused):  # BodyParser refused the body (ninja re-raises it as HttpError)
        return refused_body(exc.__cause__.problem)
    if isinstance(exc.__cause__, RequestDataTooBig):
        return too_large()
    return error(exc.status_code, str(exc))


@api.exception_handler(Http404)
def _not_found(request: HttpRequest, exc: Http404) -> JsonResponse:
    return error(404, str(exc) or NOT_FOUND)


@api.exception_handler(RequestDataTooBig)
def _too_large(request: HttpRequest, exc: RequestDataTooBig) -> JsonResponse:
    return too_large()


@api.exception_handler(Exception)
def _server_error(request: HttpRequest, exc: Exception) -> JsonResponse:
    """Anything unexpected: logged with its traceback, answered as JSON (never a traceback, debug on or off)."""
    return server_error(request, exc)


NOT_FOUND = "there is nothing at this address; the endpoints are listed at /api/docs"


ERRORS = {400: ErrorOut, 401: ErrorOut, 403: ErrorOut, 404: ErrorOut, 405: ErrorOut, 500: ErrorOut}
PUSH_BODY = {
    "requestBody": {
        "description": 'An import file (?filename picks its format by suffix), or JSON {"records": [...]}.',
        "content": {
            "application/json": {"schema": RecordsIn.model_json_schema()},
            "application/x-ndjson": {"schema": {"type": "string"}},
            "text/csv": {"schema": {"type": "string"}},
            "application/octet-stream": {"schema": {"type": "string", "format": "binary"}},
        },
    }
}


# -- pushes -----------------------------------------------------------------------------------------------


@api.post(
    "/outputs", auth=PUSH, response={200: PushOut, 201: PushOut, 413: ErrorOut, **ERRORS}, openapi_extra=PUSH_BODY
)
def push_outputs(
    request: TokenHttpRequest,
    eval_set: EvalSetName,
    agent_version: str | None = None,
    filename: str = "outputs.jsonl",
):
    """Push cases and outputs into an eval set (created if missing), as `import_cases` does: all or nothing."""
    check_scope(request, eval_set=eval_set)
    return Status(
        *run_import(
            import_cases, body_source(request, filename), eval_set_name=eval_set, default_agent_version=agent_version
        )
    )


@api.post(
    "/verdicts", auth=PUSH, response={200: PushOut, 201: PushOut, 413: ErrorOut, **ERRORS}, openapi_extra=PUSH_BODY
)
def push_verdicts(
    request: TokenHttpRequest,
    eval_set: EvalSetName,
    rubric: RubricRef,
    judge: JudgeName,
    agent_version: str = "",
    filename: str = "verdicts.jsonl",
    scorer: list[str] = Query([]),  # noqa: B008 - ninja's way to declare a repeated query parameter
    score: list[str] = Query([]),  # noqa: B008
    skip_scorer: list[str] = Query([]),  # noqa: B008
):
    """Push verdicts judged elsewhere, as `import_verdicts` does (scorer/score/skip_scorer: Inspect AI logs), into
    an imported judge config the token names; the run records the token."""
    check_scope(request, eval_set=eval_set, rubric=rubric)
    check_judge(request, judge=judge)
    try:
        mapping = ScoreMapping.parse(scorer, score, skip_scorer, via_api=True)
    except ValueError as exc:
        raise ApiError(400, str(exc)) from None
    source = body_source(request, filename)
    # One transaction for the run and its record of the token: a pushed run never exists without its provenance.
    with transaction.atomic():
        status, body = run_import(
            import_verdicts,
            source,
            eval_set_name=eval_set,
            rubric_ref=rubric,
            judge_name=judge,
            default_agent_version=agent_version,
            score_mapping=mapping,
            via=JudgeRun.ImportedVia.PUSH,
        )
        if "run" in body["counts"]:
            VerdictPush.objects.create(run_id=body["counts"]["run"], token=request.auth)
    return Status(status, body)


# -- judge runs -------------------------------------------------------------------------------------------


def _named(eval_set: str, rubric: str, judge: str) -> tuple[EvalSet, RubricVersion, JudgeConfig]:
    """The eval set, rubric version and judge config by name; ApiError 404 naming what was asked.

    As at the HTTP gate, the message does not list the names that exist: a token holder learns
    nothing beyond what it named and its token's scope.
    """
    try:
        return (
            eval_set_named(eval_set, say_known=False),
            RubricVersion.objects.by_ref(rubric, say_known=False),
            judge_named(judge, say_known=False),
        )
    except UnknownName as exc:
        raise ApiError(404, str(exc)) from None


def progress_body(progress: Progress) -> dict:
    body = dataclasses.asdict(progress)
    for key in ("started_at", "finished_at"):
        body[key] = body[key].isoformat() if body[key] else None
    body.update(percent=progress.percent, finished=progress.finished, complete=progress.complete)
    return body


@api.post("/judge-runs", auth=JUDGE, response={202: ProgressOut, **ERRORS, 503: ErrorOut})
def start_judge_run(request: TokenHttpRequest, payload: RunIn):
    """Queue a judge run on the Celery workers (as `run_judge` does); follow it with GET /api/judge-runs/{id}."""
    check_scope(request, eval_set=payload.eval_set, rubric=payload.rubric)
    try:
        scope = runner.Scope(*_named(payload.eval_set, payload.rubric, payload.judge), payload.agent_version)
        # The judge's API key lives where the workers run, not necessarily here: the lane checks it.
        run = runner.start_run(scope, check_api_key=False)
    except Misconfigured as exc:
        raise ApiError(400, f"the run cannot start: {exc}") from None
    run.refresh_from_db(fields=["status", "error"])
    if run.status == JudgeRun.Status.FAILED:
        raise ApiError(503, f"judge run {run.pk} could not start: {run.error}", run_id=run.pk)
    # The progress as the domain words it (ProgressOut documents it; tests/test_api_schema.py holds it to that).
    return JsonResponse(progress_body(progress_of(run)), status=202)


@api.get("/judge-runs/{run_id}", auth=JUDGE, response={200: ProgressOut, **ERRORS})
def judge_run_progress(request: TokenHttpRequest, run_id: int):
    """How far a judge run has got: items, verdicts per outcome, the most frequent ERROR reasons."""
    run = JudgeRun.objects.select_related("eval_set", "rubric_version__rubric").filter(pk=run_id).first()
    # A run outside the token's scope gets the very answer a missing one gets: a 403 would tell a token
    # holder which run ids exist (and so how many runs other projects made).
    try:
        if run is not None:
            check_scope(request, eval_set=run.eval_set.name, rubric=run.rubric_version.ref)
    except ApiError:
        run = None
    if run is None:
        raise ApiError(404, f"there is no judge run {run_id}")
    return JsonResponse(progress_body(progress_of(run)))


# -- calibration and the gate -----------------------------------------------------------------------------


@api.get("/calibration-report", auth=REPORT, response={200: ReportOut, **ERRORS})
def report(
    request: TokenHttpRequest,
    eval_set: EvalSetName,
    rubric: RubricRef,
    judge: JudgeName,
    agent_version: str | None = None,
    by: str | None = None,
):
    """The calibration report: the same JSON as `calibration_report --format json` (by=agent_version splits it)."""
    check_scope(request, eval_set=eval_set, rubric=rubric)
    if by not in (None, "agent_version"):
        raise ApiError(400, f"by must be agent_version (or left out), not {by!r}")
    if by and agent_version:
        raise ApiError(400, "by=agent_version and agent_version exclude each other: pick one")
    es, rv, jc = _named(eval_set, rubric, judge)
    built = (
        segmented_report(eval_set=es, rubric_version=rv, judge_config=jc)
        if by
        else calibration_report(
            eval_set=es, rubric_version=rv, judge_config=jc, agent_version=agent_version, with_audit_plans=True
        )
    )
    # A version measured on the held-out split: its figures in this answer are a counted look (docs/calibration.md).
    count_report_look(eval_set=es, rubric_version=rv, judge_config=jc, by=None, via="api")
    return HttpResponse(to_json(built), content_type="application/json")


# -- judge guidance and gold splits (docs/judging.md, "Improving a judge") -----------------------------------


def _token_lead(request: TokenHttpRequest) -> User:
    """The lead a guidance token acts for: who made it, while still an active lead."""
    lead = request.auth.created_by
    if not has_role(lead, Role.LEAD):
        raise ApiError(403, "the lead who made this token is no longer an active lead; ask a lead for a new token")
    return lead


def _check_guidance_scope(request: TokenHttpRequest, config: JudgeConfig) -> None:
    """A config's guidance is within the token's scope when it speaks of the token's rubric version and its
    examples come from eval sets the token covers; a config without guidance is readable by any guidance token."""
    if config.guidance_rubric_version is not None:
        _check_rubric(request, config.guidance_rubric_version.ref)
        for name in sorted({e.get("eval_set", "") for g in config.guidance.values() for e in g.get("examples", [])}):
            check_scope(request, eval_set=name)


def _check_rubric(request: TokenHttpRequest, ref: str) -> None:
    if ref != request.auth.rubric_version.ref:
        raise ApiError(403, f"this token is for {request.auth.rubric_version.ref} only, not {ref!r}")


@api.get("/judge-guidance", auth=GUIDANCE, response={200: GuidanceOut, **ERRORS})
def read_guidance(request: TokenHttpRequest, judge: JudgeName):
    """A judge config's guidance (notes and examples per criterion), its version and what it was derived from."""
    try:
        config = judge_named(judge, say_known=False)
    except UnknownName as exc:
        raise ApiError(404, str(exc)) from None
    _check_guidance_scope(request, config)
    return JsonResponse(as_document(config))


@api.post("/judge-guidance", auth=GUIDANCE, response={201: GuidanceOut, **ERRORS})
def derive_guidance(request: TokenHttpRequest, payload: DeriveIn):
    """A new version of a judge config with this guidance; the base is unchanged. Refused, nothing written, when
    an example is not a verbatim excerpt of its output, is not the gold, or comes from the held-out split."""
    _check_rubric(request, payload.rubric)
    lead = _token_lead(request)
    try:
        base = judge_named(payload.judge, say_known=False)
    except UnknownName as exc:
        raise ApiError(404, str(exc)) from None
    _check_guidance_scope(request, base)
    document = payload.model_dump()
    ids = {e["output_id"] for c in document["criteria"].values() for e in c["examples"]}
    for name in sorted(set(Output.objects.filter(pk__in=ids).values_list("case__eval_set__name", flat=True))):
        check_scope(request, eval_set=name)
    del document["judge"]
    try:
        config = derive_config(base=base, guidance=document, by=lead)
    except GuidanceRefused as exc:
        raise ApiError(400, f"{exc}; nothing was written") from None
    return JsonResponse(as_document(config), status=201)


@api.get("/gold-split", auth=GUIDANCE, response={200: SplitOut, **ERRORS})
def read_split(request: TokenHttpRequest, eval_set: EvalSetName, rubric: RubricRef):
    """The development and held-out split of an eval set's gold (output ids; figures are never here)."""
    check_scope(request, eval_set=eval_set, rubric=rubric)
    try:
        es, rv = eval_set_named(eval_set, say_known=False), RubricVersion.objects.by_ref(rubric, say_known=False)
    except UnknownName as exc:
        raise ApiError(404, str(exc)) from None
    split = split_for(es, rv)
    if split is None:
        raise ApiError(404, f"{eval_set} has no gold split under {rubric} yet")
    return JsonResponse(describe(split))


def _unknown_name(outcome: GateOutcome) -> bool:
    """The gate could not decide because a name matched nothing (the record then lacks what it names)."""
    record = outcome.record
    return None in (record.eval_set_id, record.rubric_version_id, record.judge_config_id)


@api.post("/gate", auth=GATE, response={200: GateOut, 409: ErrorOut, 411: ErrorOut, 413: ErrorOut, **ERRORS})
def gate(request: TokenHttpRequest, payload: GateIn):
    """The release gate, as `manage.py gate --format json` (the token's rubric version, eval set pattern and the
    lead's policy, which the thresholds may only tighten). Also answers at /calibration/api/gate.

    200 with the decision (read "passed"), 409 when it cannot decide, 404 for a name that matches nothing (both
    with "passed": null); every decision is recorded.
    """
    token = request.auth
    refusal = token.scope_refusal(rubric_ref=payload.rubric, eval_set_name=payload.eval_set)
    if refusal:
        raise ApiError(403, refusal)
    tightening = Tightening(payload.min_pass_rate, payload.max_error_rate, payload.confidence)  # GateIn checked
    asked = GateRequest(payload.eval_set, payload.rubric, payload.judge, payload.agent_version or None, tightening)
    try:
        outcome = gate_and_record(asked, source=GateResult.Source.HTTP, token=token)
    except PolicyRefused as exc:
        raise ApiError(400, str(exc)) from None
    if outcome.decision is None:
        raise ApiError(404 if _unknown_name(outcome) else 409, outcome.reason, passed=None)
    if outcome.decision.undecided:  # held back by the candidate's own gold: the criteria say why
        raise ApiError(409, outcome.reason, **{k: v for k, v in outcome.decision.as_dict().items() if k != "error"})
    return JsonResponse(outcome.decision.as_dict())


# -- audit plans (issue 22) -------------------------------------------------------------------------------
# The same domain functions as manage.py audit_plan (calibration/audits/plans.py and figures.py), in the name of the
# lead who made the token: an audit plan is a lead's act, so a token whose maker is no longer a lead may not act for
# one.

AUDIT_ERRORS = {**ERRORS, 409: ErrorOut, 411: ErrorOut, 413: ErrorOut}
ForecastK = Annotated[int, Field(ge=1, le=MAX_AUDIT_K, description="forecast after this many more labels")]


def _lead_of(request: TokenHttpRequest):
    maker = request.auth.created_by
    if maker.role != Role.LEAD:
        raise ApiError(
            403,
            f"this token was made by {maker.username}, who is no longer a lead; audit plans are a lead's: "
            "a lead can create a token with the audit scope",
        )
    return maker


def _plan_in_scope(request: TokenHttpRequest, plan_id: int) -> AuditPlan:
    """The plan, if the token's scope covers its eval set and rubric version; else the answer a missing plan gets
    (a 403 would tell a token holder which plan ids exist)."""
    plan = AuditPlan.objects.for_figures().select_related("created_by").filter(pk=plan_id).first()
    try:
        if plan is not None:
            check_scope(request, eval_set=plan.eval_set.name, rubric=plan.criterion.rubric_version.ref)
    except ApiError:
        plan = None
    if plan is None:
        raise ApiError(404, f"there is no audit plan {plan_id}")
    return plan


def _refused(exc: AuditPlanError) -> ApiError:
    return ApiError(409, str(exc))


@api.post("/audit-plans", auth=AUDIT, response={201: AuditFiguresOut, **AUDIT_ERRORS})
def create_audit_plan(request: TokenHttpRequest, payload: AuditPlanIn):
    """Start an audit plan on a release candidate, as `audit_plan create` does; answers with its figures.

    404 for a name that matches nothing (the criterion included), 409 when the plan cannot start (the queue is not
    open under the rubric version, the criterion does not gate with the judge, a plan is open, looser thresholds).
    """
    check_scope(request, eval_set=payload.eval_set, rubric=payload.rubric)
    lead = _lead_of(request)
    eval_set, rubric_version, judge_config = _named(payload.eval_set, payload.rubric, payload.judge)
    criterion = rubric_version.criteria.filter(key=payload.criterion).first()
    if criterion is None:
        raise ApiError(404, f"{rubric_version.ref} has no criterion {payload.criterion!r}")
    try:
        plan = start_plan(
            criterion=criterion,
            eval_set=eval_set,
            judge_config=judge_config,
            by=lead,
            agent_version=payload.agent_version,
            seed=payload.seed,
            min_pass_rate=payload.min_pass_rate,
            confidence=payload.confidence,
            design=payload.design,
        )
    except AuditPlanError as exc:
        raise _refused(exc) from None
    return JsonResponse(plan_figures(plan).as_dict(), status=201)


@api.get("/audit-plans", auth=AUDIT, response={200: AuditPlanListOut, **ERRORS})
def list_audit_plans(request: TokenHttpRequest, eval_set: EvalSetName):
    """The audit plans of an eval set under the token's rubric version, newest first, open and closed."""
    check_scope(request, eval_set=eval_set)
    try:
        found = eval_set_named(eval_set, say_known=False)
    except UnknownName as exc:
        raise ApiError(404, str(exc)) from None
    plans = (
        AuditPlan.objects.filter(eval_set=found, criterion__rubric_version=request.auth.rubric_version)
        .select_related("criterion__rubric_version__rubric", "eval_set", "judge_config", "created_by")
        .order_by("-created_at", "-id")
    )
    records = [plan_record(plan) for plan in plans]
    return JsonResponse(
        {"eval_set": found.name, "plans": records, "open": sum(r["closed_at"] is None for r in records)}
    )


@api.get("/audit-plans/{plan_id}", auth=AUDIT, response={200: AuditFiguresOut, **ERRORS})
def show_audit_plan(request: TokenHttpRequest, plan_id: int, k: ForecastK = 25):
    """The plan's figures now: the same JSON as `audit_plan show PLAN --format json` (k: the forecast's next k)."""
    plan = _plan_in_scope(request, plan_id)
    return JsonResponse(plan_figures(plan, k=k).as_dict())


@api.post("/audit-plans/{plan_id}/next", auth=AUDIT, response={200: AuditFiguresOut, **AUDIT_ERRORS})
def release_audit_plan_next(request: TokenHttpRequest, plan_id: int, payload: AuditNextIn):
    """'Label these k next', as `audit_plan next PLAN -k K`: the queue may hand out k more outputs of the order;
    answers with the figures and the forecast for those k. 409 if the plan is closed."""
    plan = _plan_in_scope(request, plan_id)
    lead = _lead_of(request)
    try:
        release_plan_next(plan=plan, by=lead, k=payload.k)
    except AuditPlanError as exc:
        raise _refused(exc) from None
    return JsonResponse(plan_figures(plan, k=payload.k).as_dict())


@api.post("/audit-plans/{plan_id}/close", auth=AUDIT, response={200: AuditPlanSummaryOut, **AUDIT_ERRORS})
def close_audit_plan(request: TokenHttpRequest, plan_id: int):
    """Close a plan (kept for the record; closing a closed plan changes nothing); another may then be started."""
    plan = _plan_in_scope(request, plan_id)
    try:
        close_plan(plan=plan, by=_lead_of(request))
    except AuditPlanError as exc:
        raise _refused(exc) from None
    return JsonResponse(plan_record(plan))
