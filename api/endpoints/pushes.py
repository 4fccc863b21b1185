"""Pushes (POST /api/outputs, /api/verdicts): a request body handed to the importers as if it were a file, and
their answer as JSON.

The body is either a file in any import format (JSONL, CSV, ADK, an Inspect AI log), named by
the `filename` parameter so that its suffix picks the format as on the command line, or a JSON
object {"records": [...]} whose records are read as JSON Lines (line N is records[N-1]); that body is
read with the file rules first (api/strict_json.py), so a key twice in a record is refused as
it is in a file. Either way the importer is the one the commands run: same checks, same
all-or-nothing, same messages.
"""

from __future__ import annotations

import io
import json

import pydantic
from django.conf import settings
from django.db import transaction
from django.http import HttpRequest
from ninja import Query, Router, Status
from pydantic_core import ErrorDetails

from api.auth import ApiError, TokenAuth, TokenHttpRequest, check_judge, check_scope
from api.models import TokenScope, VerdictPush
from api.schemas import ERRORS, ErrorOut, PushOut, RecordsIn
from api.strict_json import BodyRefused, parse_json_body
from evals.problems import ImportFailed
from formats.case_import import import_cases
from formats.import_summary import ImportReport
from formats.inspect_scores import ScoreMapping
from formats.readers import Source
from formats.verdicts import import_verdicts
from judging.models import JudgeRun

from .names import EvalSetName, JudgeName, RubricRef

router = Router()
PUSH = TokenAuth(TokenScope.PUSH)


def max_push_bytes() -> int:
    # The upload page's limit (settings.ICEWATER_UPLOAD_MAX_BYTES, ICEWATER_UPLOAD_MAX_MB, 10 MB by default): a
    # push is imported inside the request, as an upload is, and must end well before the web worker's timeout
    # (the derivation is beside the setting). Larger sets go in several pushes (each is atomic) or through
    # import_cases on the server, which has no limit.
    return settings.ICEWATER_UPLOAD_MAX_BYTES


def body_source(request: HttpRequest, filename: str) -> Source:
    """The body as an import file; ApiError 413 above the limit, 400 for a JSON body that is not {"records": [...]}."""
    try:
        length = int(request.headers.get("Content-Length") or 0)
    except ValueError:
        raise ApiError(400, "the Content-Length header is not a number") from None
    limit = max_push_bytes()
    # Read from the stream, not request.body, so that this limit (not DATA_UPLOAD_MAX_MEMORY_SIZE) decides,
    # and one byte more than allowed, so that a body longer than its Content-Length says is caught too.
    body = request.read(limit + 1) if length <= limit else b""
    if length > limit or len(body) > limit:
        raise ApiError(
            413,
            f"the body is {max(length, len(body)):,} bytes or more; a push may be at most {limit:,} bytes: split it "
            "into several pushes (each is all or nothing) or import the file on the server with manage.py",
            limit_bytes=limit,
        )
    if request.content_type == "application/json":
        return Source(name="records", stream=io.BytesIO(_records_as_jsonl(body)))
    return Source(name=filename, stream=io.BytesIO(body))


def _records_as_jsonl(body: bytes) -> bytes:
    try:
        value = parse_json_body(body)
    except BodyRefused as exc:
        problem = exc.problem
        raise ApiError(400, f"the body was refused: {problem}", problems=[problem]) from None
    try:
        records = RecordsIn.model_validate(value).records
    except pydantic.ValidationError as exc:
        if not all(_left_to_the_importer(e) for e in exc.errors()):
            raise ApiError(
                400,
                'a JSON body must be {"records": [...]}, one object per record; or send the file itself with '
                "another Content-Type and ?filename=NAME",
            ) from None
        records = value["records"]
    # One line per record, as a JSONL file would hold it (parse_json_body left nothing a line cannot carry).
    return b"".join(json.dumps(r, ensure_ascii=False).encode() + b"\n" for r in records)


def _left_to_the_importer(error: ErrorDetails) -> bool:
    """A record that is not an object, or no record at all: the importer says so, with the line, as for a file."""
    loc = error["loc"]
    return loc[:1] == ("records",) and (len(loc) > 1 or error["type"] == "too_short")


def run_import(importer, source: Source, **kwargs) -> tuple[int, dict]:
    """(status, body): 201 when something was written, 200 when it was all there already, 400 with the problems."""
    try:
        report: ImportReport = importer(source=source, **kwargs)
    except ImportFailed as exc:
        raise ApiError(
            400,
            "the push was refused; nothing was imported",
            problems=exc.problems,
            truncated=exc.truncated,
        ) from None
    body = {"summary": report.summary, "notes": report.notes, "counts": report.counts}
    return (201 if report.changed else 200), body


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


@router.post(
    "/outputs", auth=PUSH, response={200: PushOut, 201: PushOut, 413: ErrorOut, **ERRORS}, openapi_extra=PUSH_BODY
)
def push_outputs(
    request: TokenHttpRequest,
    eval_set: EvalSetName,
    agent_version: str | None = None,
    filename: str = "outputs.jsonl",
):
    """Push cases and outputs into an eval set of the token's workspace (created there if missing), as
    `import_cases` does: all or nothing."""
    check_scope(request, eval_set=eval_set)
    return Status(
        *run_import(
            import_cases,
            body_source(request, filename),
            workspace=request.workspace,
            eval_set_name=eval_set,
            default_agent_version=agent_version,
        )
    )


@router.post(
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
    an imported judge config the token names, of the token's workspace (created there if missing); the run records
    the token."""
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
            workspace=request.workspace,
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
