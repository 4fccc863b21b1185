"""The release gate over HTTP, for CI systems: POST JSON with a bearer token.

    curl -X POST https://icewater.example/calibration/api/gate \
         -H "Authorization: Bearer icw_..." -H "Content-Type: application/json" \
         -d '{"eval_set": "rc-42", "rubric": "refund@3", "judge": "gpt-judge"}'

200 with the gate's JSON (the same as `manage.py gate --format json`) when it decided (pass or fail:
read "passed"); 409 with {"passed": null, "error": ...} when it cannot decide, 404 (also with "passed":
null) when a name matches nothing; 400 for a bad body (read with the import files' rules,
formats/json_body.py, and checked against GateIn: an unknown key is refused) or a threshold looser
than the lead's policy (callers may only tighten it); 401 for a missing, unknown or revoked token; 403
when the token has no gate scope, or the rubric version or eval set is outside its scope. Every error
is JSON in the API's one error shape (labeling.problems.error_body, docs/api.md), 405 and 500 included.
No message names anything the token holder did not name or cannot already gate on. Session cookies are
not accepted here, which is why the view needs no CSRF token.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from functools import wraps

import pydantic
from django.conf import settings
from django.core.exceptions import RequestDataTooBig
from django.http import HttpRequest, HttpResponse, JsonResponse
from django.utils import timezone
from django.views.decorators.csrf import csrf_exempt
from pydantic import BaseModel, ConfigDict, Field

from labeling.json_body import BodyRefused, parse_json_body, schema_problems
from labeling.problems import Problem, error_body

from .gate import GateOutcome, GateRequest, gate_and_record
from .models import GateResult, GateToken, TokenScope, hash_token
from .policy import PolicyRefused, Tightening

# Uncaught exceptions are logged where Django logs them, with the traceback; the answer stays JSON.
request_logger = logging.getLogger("django.request")

SERVER_ERROR = "the server failed to answer (an error on our side, logged with its details); try again later"
NOT_JSON = "send a JSON object (Content-Type: application/json)"
RUBRIC_REF = r"^.+@[^@]+$"  # NAME@VERSION, as lookup.parse_rubric_ref reads it (the last @ splits)


class GateIn(BaseModel):
    """The gate's body, the same as the command's flags. The three thresholds are optional and may only tighten
    the lead's policy (checked by the gate, which knows the policy). /api/gate's OpenAPI schema is this model's,
    so the schema refuses exactly what the view refuses."""

    model_config = ConfigDict(extra="forbid", strict=True, title="GateRequest")

    eval_set: str = Field(min_length=1, max_length=200, description="the release candidate's eval set")
    rubric: str = Field(min_length=3, max_length=310, pattern=RUBRIC_REF, description="NAME@VERSION")
    judge: str = Field(min_length=1, max_length=200, description="the judge config")
    agent_version: str | None = Field(default=None, max_length=200, description="gate only this agent version")
    min_pass_rate: float | None = Field(default=None, ge=0, le=1, description="only tightens the lead's")
    max_error_rate: float | None = Field(default=None, ge=0, le=1, description="only tightens the lead's")
    confidence: float | None = Field(default=None, gt=0, lt=1, description="only tightens the lead's")


def error(status: int, message: str, problems: list[Problem] | tuple = (), **extra) -> JsonResponse:
    return JsonResponse(error_body(message, problems, **extra), status=status)


def server_error(request: HttpRequest, exc: BaseException) -> JsonResponse:
    """A 500 as JSON, logged (with its traceback) as Django logs one: the answer never carries the traceback."""
    request_logger.error("Internal Server Error: %s", request.path, exc_info=exc, extra={"status_code": 500})
    return error(500, SERVER_ERROR)


def too_large() -> JsonResponse:
    limit = settings.DATA_UPLOAD_MAX_MEMORY_SIZE
    return error(413, f"the body is larger than {limit:,} bytes; {NOT_JSON} of at most that size", limit_bytes=limit)


def json_errors(*methods: str) -> Callable:
    """A view of the API that answers only `methods` and every error as JSON: 405 with Allow, 500 logged."""

    def decorator(view: Callable[..., HttpResponse]) -> Callable[..., HttpResponse]:
        @wraps(view)
        def answered(request: HttpRequest, *args, **kwargs) -> HttpResponse:
            if request.method not in methods:
                response = error(405, f"{request.method} is not allowed here; use {' or '.join(methods)}")
                response["Allow"] = ", ".join(methods)
                return response
            try:
                return view(request, *args, **kwargs)
            except RequestDataTooBig:
                return too_large()
            except Exception as exc:
                return server_error(request, exc)

        return answered

    return decorator


def refused_body(problem: Problem) -> JsonResponse:
    return error(400, f"the body was refused: {problem}; {NOT_JSON}", [problem])


def unread_chunked_body(request: HttpRequest) -> bool:
    """A chunked body the server did not decode (it left no Content-Length): reading would see nothing.

    gunicorn decodes chunked bodies, and config/wsgi.py hands them on with their length; other servers may not.
    """
    return "chunked" in request.headers.get("Transfer-Encoding", "").lower() and not request.headers.get(
        "Content-Length"
    )


LENGTH_REQUIRED = "this server cannot read a chunked body; send the body with a Content-Length header"


def _token(request: HttpRequest) -> GateToken | None:
    scheme, _, secret = request.headers.get("Authorization", "").partition(" ")
    if scheme.lower() != "bearer" or not secret.strip():
        return None
    tokens = GateToken.objects.select_related("rubric_version__rubric")
    return tokens.filter(token_hash=hash_token(secret.strip())).first()


def _unknown_name(outcome: GateOutcome) -> bool:
    """The gate could not decide because a name matched nothing (the record then lacks what it names)."""
    record = outcome.record
    return None in (record.eval_set_id, record.rubric_version_id, record.judge_config_id)


@csrf_exempt
@json_errors("POST")
def gate(request: HttpRequest) -> JsonResponse:
    token = _token(request)
    if token is None or not token.is_active:
        reason = "this token was revoked" if token else "send a valid gate token as 'Authorization: Bearer <token>'"
        return error(401, reason)
    if not token.allows(TokenScope.GATE):
        return error(
            403, f"this token may not gate (its scopes: {', '.join(token.scopes)}); a lead can add one that may"
        )
    if unread_chunked_body(request):
        return error(411, LENGTH_REQUIRED)
    try:
        body = parse_json_body(request.body)
    except BodyRefused as exc:
        return refused_body(exc.problem)
    if not isinstance(body, dict):
        return refused_body(Problem("body", None, None, "must be a JSON object, not a list or a value"))
    try:
        asked = GateIn.model_validate(body)
    except pydantic.ValidationError as exc:
        problems = schema_problems(exc.errors(), known=GateIn.model_fields)
        # "fields" is the old shape of this answer, kept for clients that read it (docs/api.md, Errors).
        fields = {p.field or "body": [p.message] for p in problems}
        return error(400, bad_parameters(problems), problems, fields=fields)
    tightening = Tightening(asked.min_pass_rate, asked.max_error_rate, asked.confidence)  # GateIn checked the ranges
    refusal = token.scope_refusal(rubric_ref=asked.rubric, eval_set_name=asked.eval_set)
    if refusal:
        return error(403, refusal)
    GateToken.objects.filter(pk=token.pk).update(last_used_at=timezone.now())
    request_ = GateRequest(asked.eval_set, asked.rubric, asked.judge, asked.agent_version or None, tightening)
    try:
        outcome = gate_and_record(request_, source=GateResult.Source.HTTP, token=token)
    except PolicyRefused as exc:
        return error(400, str(exc))
    if outcome.decision is None:
        status = 404 if _unknown_name(outcome) else 409
        return JsonResponse(error_body(outcome.reason, passed=None), status=status)
    return JsonResponse(outcome.decision.as_dict())


def bad_parameters(problems: list[Problem]) -> str:
    """The one-line summary of a validation's problems: 'bad parameters: eval_set: is missing; ...'."""
    return "bad parameters: " + "; ".join(f"{p.field or p.file}: {p.message}" for p in problems)
