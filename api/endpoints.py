"""The JSON API under /api/ (django-ninja): OpenAPI schema at /api/openapi.json, Swagger UI at /api/docs.

Every endpoint calls the same domain function as the command line (the importers, the judge
runner, the calibration report, the gate), so the API has the same checks, atomicity and
messages. Every JSON body and query is read with the import files' rules (labeling/io/json_body.py:
repeated keys, nesting, NUL, lone surrogates), and every error is JSON in one shape,
{"error": message, "problems": [...], ...details} (labeling.io.errors.error_body), with the status
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
from pydantic import ConfigDict

from calibration import api as gate_api
from calibration.api import RUBRIC_REF, GateIn, bad_parameters, error, refused_body, server_error, too_large
from calibration.models import TokenScope as Scope
from calibration.models import VerdictPush
from calibration.report import calibration_report, segmented_report
from calibration.report_files import to_json
from evals.lookup import UnknownName, eval_set_named, rubric_version_named
from judging import runner
from judging.backends import Misconfigured
from judging.inspect_scores import ScoreMapping
from judging.io import import_verdicts
from judging.judge_lookup import judge_named
from judging.models import JudgeRun
from judging.run_progress import Progress, progress_of
from labeling.io import import_cases
from labeling.io.json_body import BodyRefused, check_query, parse_json_body, schema_problems

from .auth import NO_TOKEN, ApiError, TokenAuth, check_judge, check_scope
from .pushes import body_source, run_import

# Swagger UI's stylesheet draws its icons as data: SVG images; the site's policy allows images from 'self' only.
# An image cannot run anything, so the docs page alone may also show data: images (scripts stay 'self' only).
DOCS_CSP = csp_update({"img-src": ["data:"]})


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


api = NinjaAPI(
    title="Icewater API",
    version="1",
    description="Push outputs and verdicts, run judges, read calibration reports and ask the release gate. "
    "Authenticate with 'Authorization: Bearer <token>' (a token a lead made on the gate page, with the endpoint's "
    "scope); see docs/api.md.",
    urls_namespace="api",
    docs_decorator=DOCS_CSP,
    parser=BodyParser(),
)
PUSH, JUDGE, REPORT, GATE = (TokenAuth(s) for s in (Scope.PUSH, Scope.JUDGE, Scope.REPORT, Scope.GATE))
# Names in query parameters: never empty (the schema says so, as the server does), at most a name's length.
EvalSetName = Annotated[str, Field(min_length=1, max_length=200)]
RubricRef = Annotated[str, Field(min_length=3, max_length=310, pattern=RUBRIC_REF, description="NAME@VERSION")]
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
    """ninja's checks of parameters and JSON bodies against their schemas, as the HTTP gate words its own."""
    problems = schema_problems(exc.errors)
    return error(400, bad_parameters(problems), problems)


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


ERRORS = {400: ErrorOut, 401: ErrorOut, 403: ErrorOut, 404: ErrorOut, 405: ErrorOut, 500: ErrorOut}
# What the server takes as {"records": [...]}: at least one record, each an object (one line of the JSONL format,
# whose fields the importer checks), and nothing beside "records".
RECORDS = {
    "type": "object",
    "required": ["records"],
    "additionalProperties": False,
    "properties": {"records": {"type": "array", "minItems": 1, "items": {"type": "object"}}},
}
PUSH_BODY = {
    "requestBody": {
        "description": 'An import file (?filename picks its format by suffix), or JSON {"records": [...]}.',
        "content": {
            "application/json": {"schema": RECORDS},
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
    request: HttpRequest,
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
    request: HttpRequest,
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


class RunIn(Schema):
    # Strict, as the server: a misspelt key or a number for a name is refused, not ignored or converted.
    model_config = ConfigDict(extra="forbid", strict=True)

    eval_set: str = Field(min_length=1, max_length=200)
    rubric: str = Field(min_length=3, max_length=310, pattern=RUBRIC_REF, description="NAME@VERSION")
    judge: str = Field(min_length=1, max_length=200)
    agent_version: str = Field("", max_length=200)


def _named(eval_set: str, rubric: str, judge: str) -> tuple:
    """The eval set, rubric version and judge config by name; ApiError 404 naming what was asked.

    As at the HTTP gate, the message does not list the names that exist: a token holder learns
    nothing beyond what it named and its token's scope.
    """
    try:
        return (
            eval_set_named(eval_set, say_known=False),
            rubric_version_named(rubric, say_known=False),
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


@api.post("/judge-runs", auth=JUDGE, response={202: dict, **ERRORS, 503: ErrorOut})
def start_judge_run(request: HttpRequest, payload: RunIn):
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
    return Status(202, progress_body(progress_of(run)))


@api.get("/judge-runs/{run_id}", auth=JUDGE, response={200: dict, **ERRORS})
def judge_run_progress(request: HttpRequest, run_id: int):
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
    return progress_body(progress_of(run))


# -- calibration and the gate -----------------------------------------------------------------------------


@api.get("/calibration-report", auth=REPORT, response={200: dict, **ERRORS})
def report(
    request: HttpRequest,
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
    scope = dict(zip(("eval_set", "rubric_version", "judge_config"), _named(eval_set, rubric, judge), strict=True))
    built = segmented_report(**scope) if by else calibration_report(**scope, agent_version=agent_version)
    return HttpResponse(to_json(built), content_type="application/json")


# The view validates the body with GateIn itself (it also answers at /calibration/api/gate): its schema is this.
GATE_BODY = {"requestBody": {"required": True, "content": {"application/json": {"schema": GateIn.model_json_schema()}}}}


@api.post("/gate", auth=GATE, response={200: dict, 409: ErrorOut, 413: ErrorOut, **ERRORS}, openapi_extra=GATE_BODY)
def gate(request: HttpRequest):
    """The release gate: /calibration/api/gate itself (the token's rubric version, eval set pattern and policy).

    200 with the decision (read "passed"), 409 when it cannot decide, 404 for a name that matches nothing (both
    with "passed": null); every decision is recorded.
    """
    return gate_api.gate(request)
