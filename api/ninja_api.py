"""The JSON API under /api/ (django-ninja): OpenAPI schema at /api/openapi.json, Swagger UI at /api/docs.

The one NinjaAPI, its body parser and its error answers; the operations are in api/endpoints/, one Router per
concern, mounted below in the order of the OpenAPI document. Every endpoint calls the same domain function as the
command line (the importers, the judge runner, the calibration report, the gate), so the API has the same checks,
atomicity and messages. Every JSON body and query is read with the import files' rules (api/strict_json.py:
repeated keys, nesting, NUL, lone surrogates), and every error is JSON in one shape,
{"error": message, "problems": [...], ...details} (evals.problems.error_body), with the status
that fits (400 bad input, 401 no usable token, 403 outside the token's scope, 404 unknown name or
address, never followed by the names that exist, 405, 409 the gate cannot decide, 413 too large,
500 logged); docs/api.md lists them.
"""

from __future__ import annotations

from csp.decorators import csp_update
from django.core.exceptions import RequestDataTooBig
from django.http import Http404, HttpRequest, JsonResponse
from ninja import NinjaAPI, Schema
from ninja.errors import AuthenticationError, HttpError, ValidationError
from ninja.operation import Operation
from ninja.parser import Parser

from evals.problems import Problem

from .answers import LENGTH_REQUIRED, bad_parameters, error, refused_body, server_error, too_large, unread_chunked_body
from .auth import NO_TOKEN, ApiError
from .endpoints import audits, gate, guidance, judge_runs, pushes, report, watches
from .schemas import GateIn
from .strict_json import BodyRefused, check_query, parse_json_body, schema_problems

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
    def get_openapi_operation_id(self, operation: Operation) -> str:
        """api_endpoints_<function>, as when every operation lived in one module api/endpoints.py: clients generated
        from the schema name their methods after these ids, so moving an operation between modules keeps its id."""
        return f"api_endpoints_{operation.view_func.__name__}"

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
# The order of the OpenAPI document's paths.
for concern in (pushes, judge_runs, report, guidance, gate, audits, watches):
    api.add_router("", concern.router)


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
