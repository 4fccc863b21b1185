"""The API's answers other than success, all JSON in one shape, {"error": message, "problems": [...], ...details}
(evals.problems.error_body, docs/api.md, Errors), for every endpoint and address under /api/ and for the
gate's old address /calibration/api/gate."""

from __future__ import annotations

import logging

from django.conf import settings
from django.http import HttpRequest, JsonResponse

from evals.problems import Problem, error_body

# Uncaught exceptions are logged where Django logs them, with the traceback; the answer stays JSON.
request_logger = logging.getLogger("django.request")

SERVER_ERROR = "the server failed to answer (an error on our side, logged with its details); try again later"
NOT_JSON = "send a JSON object (Content-Type: application/json)"
LENGTH_REQUIRED = "this server cannot read a chunked body; send the body with a Content-Length header"


def error(status: int, message: str, problems: list[Problem] | tuple = (), **extra) -> JsonResponse:
    return JsonResponse(error_body(message, problems, **extra), status=status)


def server_error(request: HttpRequest, exc: BaseException) -> JsonResponse:
    """A 500 as JSON, logged (with its traceback) as Django logs one: the answer never carries the traceback."""
    request_logger.error("Internal Server Error: %s", request.path, exc_info=exc, extra={"status_code": 500})
    return error(500, SERVER_ERROR)


def too_large() -> JsonResponse:
    limit = settings.DATA_UPLOAD_MAX_MEMORY_SIZE
    return error(413, f"the body is larger than {limit:,} bytes; {NOT_JSON} of at most that size", limit_bytes=limit)


def refused_body(problem: Problem) -> JsonResponse:
    return error(400, f"the body was refused: {problem}; {NOT_JSON}", [problem])


def bad_parameters(problems: list[Problem]) -> str:
    """The one-line summary of a validation's problems: 'bad parameters: eval_set: is missing; ...'."""
    return "bad parameters: " + "; ".join(f"{p.field or p.file}: {p.message}" for p in problems)


def unread_chunked_body(request: HttpRequest) -> bool:
    """A chunked body the server did not decode (it left no Content-Length): reading would see nothing.

    gunicorn decodes chunked bodies, and config/wsgi.py hands them on with their length; other servers may not.
    """
    return "chunked" in request.headers.get("Transfer-Encoding", "").lower() and not request.headers.get(
        "Content-Length"
    )
