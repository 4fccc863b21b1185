"""The JSON API under /api/ (django-ninja): OpenAPI schema at /api/openapi.json, Swagger UI at /api/docs.

Every endpoint calls the same domain function as the command line (the importers, the judge
runner, the calibration report, the gate), so the API has the same checks, atomicity and
messages. Errors are JSON {"error": message, ...details} with the status that fits (400 bad
input, 401 no usable token, 403 outside the token's scope, 404 unknown name, never followed by
the names that exist, 409 the gate cannot decide, 413 too large); docs/api.md lists them.
"""

from __future__ import annotations

import dataclasses

from csp.decorators import csp_update
from django.http import HttpRequest, HttpResponse, JsonResponse
from ninja import NinjaAPI, Query, Schema, Status
from ninja.errors import AuthenticationError, HttpError, ValidationError

from calibration import api as gate_api
from calibration.export import to_json
from calibration.lookup import UnknownName, eval_set_named, judge_named, rubric_version_named
from calibration.models import TokenScope as Scope
from calibration.report import calibration_report, segmented_report
from judging import runner
from judging.backends import Misconfigured
from judging.inspect_scores import ScoreMapping
from judging.io import import_verdicts
from judging.models import JudgeRun
from judging.progress import Progress, progress_of
from labeling.io import import_cases

from .auth import NO_TOKEN, ApiError, TokenAuth, check_scope
from .pushes import body_source, run_import

# Swagger UI's stylesheet draws its icons as data: SVG images; the site's policy allows images from 'self' only.
# An image cannot run anything, so the docs page alone may also show data: images (scripts stay 'self' only).
DOCS_CSP = csp_update({"img-src": ["data:"]})

api = NinjaAPI(
    title="Icewater API",
    version="1",
    description="Push outputs and verdicts, run judges, read calibration reports and ask the release gate. "
    "Authenticate with 'Authorization: Bearer <token>' (a token a lead made on the gate page, with the endpoint's "
    "scope); see docs/api.md.",
    urls_namespace="api",
    docs_decorator=DOCS_CSP,
)
PUSH, JUDGE, REPORT, GATE = (TokenAuth(s) for s in (Scope.PUSH, Scope.JUDGE, Scope.REPORT, Scope.GATE))


# -- errors -----------------------------------------------------------------------------------------------


def _error(status: int, message: str, **extra) -> JsonResponse:
    return JsonResponse({"error": message, **extra}, status=status)


@api.exception_handler(ApiError)
def _api_error(request: HttpRequest, exc: ApiError) -> JsonResponse:
    return _error(exc.status, exc.message, **exc.extra)


@api.exception_handler(AuthenticationError)
def _no_token(request: HttpRequest, exc: AuthenticationError) -> JsonResponse:
    return _error(401, NO_TOKEN)


@api.exception_handler(ValidationError)
def _bad_input(request: HttpRequest, exc: ValidationError) -> JsonResponse:
    """ninja's checks of parameters and JSON bodies, in the importers' shape: field and message."""
    problems = [
        {"line": None, "field": ".".join(str(part) for part in e.get("loc", ())), "message": e.get("msg", "")}
        for e in exc.errors
    ]
    return _error(
        400, "bad parameters: " + "; ".join(f"{p['field']}: {p['message']}" for p in problems), problems=problems
    )


@api.exception_handler(HttpError)
def _http_error(request: HttpRequest, exc: HttpError) -> JsonResponse:
    message = str(exc)
    if message.startswith("Cannot parse request body"):  # ninja's words for a JSON body that is not JSON
        message = "the body is not valid JSON: send a JSON object (Content-Type: application/json)"
    return _error(exc.status_code, message)


class Problem(Schema):
    line: int | None
    field: str | None
    message: str
    text: str | None = None


class ErrorOut(Schema):
    error: str
    problems: list[Problem] | None = None


class PushOut(Schema):
    summary: str
    notes: list[str]
    counts: dict[str, int]


ERRORS = {400: ErrorOut, 401: ErrorOut, 403: ErrorOut, 404: ErrorOut}
PUSH_BODY = {
    "requestBody": {
        "description": 'An import file (?filename picks its format by suffix), or JSON {"records": [...]}.',
        "content": {
            "application/json": {
                "schema": {"type": "object", "required": ["records"], "properties": {"records": {"type": "array"}}}
            },
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
    request: HttpRequest, eval_set: str, agent_version: str | None = None, filename: str = "outputs.jsonl"
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
    eval_set: str,
    rubric: str,
    judge: str,
    agent_version: str = "",
    filename: str = "verdicts.jsonl",
    scorer: list[str] = Query([]),  # noqa: B008 - ninja's way to declare a repeated query parameter
    score: list[str] = Query([]),  # noqa: B008
    skip_scorer: list[str] = Query([]),  # noqa: B008
):
    """Push verdicts judged elsewhere, as `import_verdicts` does (scorer/score/skip_scorer: Inspect AI logs)."""
    check_scope(request, eval_set=eval_set, rubric=rubric)
    try:
        mapping = ScoreMapping.parse(scorer, score, skip_scorer, via_api=True)
    except ValueError as exc:
        raise ApiError(400, str(exc)) from None
    return Status(
        *run_import(
            import_verdicts,
            body_source(request, filename),
            eval_set_name=eval_set,
            rubric_ref=rubric,
            judge_name=judge,
            default_agent_version=agent_version,
            score_mapping=mapping,
        )
    )


# -- judge runs -------------------------------------------------------------------------------------------


class RunIn(Schema):
    eval_set: str
    rubric: str
    judge: str
    agent_version: str = ""


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
    eval_set: str,
    rubric: str,
    judge: str,
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


GATE_BODY = {
    "requestBody": {
        "required": True,
        "content": {
            "application/json": {
                "schema": {
                    "type": "object",
                    "required": ["eval_set", "rubric", "judge"],
                    "properties": {
                        "eval_set": {"type": "string"},
                        "rubric": {"type": "string", "description": "NAME@VERSION"},
                        "judge": {"type": "string"},
                        "agent_version": {"type": "string"},
                        "min_pass_rate": {"type": "number"},
                        "max_error_rate": {"type": "number"},
                        "confidence": {"type": "number"},
                    },
                }
            }
        },
    },
}


@api.post("/gate", auth=GATE, response={200: dict, 400: dict, 401: dict, 403: dict, 409: dict}, openapi_extra=GATE_BODY)
def gate(request: HttpRequest):
    """The release gate: /calibration/api/gate itself (the token's rubric version, eval set pattern and policy).

    200 with the decision (read "passed"), 409 when it cannot decide; every decision is recorded.
    """
    return gate_api.gate(request)
