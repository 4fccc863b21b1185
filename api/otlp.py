"""POST /api/otlp/v1/traces: the OpenTelemetry OTLP/HTTP traces receiver (docs/formats.md, "OpenTelemetry").

A plain Django view, not a ninja endpoint: OTLP bodies are protobuf (or OTLP's own JSON mapping), optionally
gzip-compressed, and the answers follow the OTLP/HTTP specification rather than the API's JSON error shape:

- 200 with an ExportTraceServiceResponse in the request's encoding; `partial_success` counts the spans refused
  (no valid ids, no end time, larger than ICEWATER_OTLP_MAX_SPAN_KB, or late: new spans of a trace already
  finished) and says why;
- 400 a body that is not an export request (or broken gzip, or OTLP/JSON the API's JSON body reader refuses: a key
  twice, nesting past 64 levels); 401/403 no token, or one without the traces scope (or whose binding's eval set
  is not of the token's workspace: spans go only into the token's own workspace);
  413 a body (compressed or not) over ICEWATER_UPLOAD_MAX_MB; 415 another Content-Type or Content-Encoding;
- 429 with Retry-After when over ICEWATER_OTLP_MAX_WAITING_SPANS spans of this token wait for their traces to
  finish; 503 with Retry-After when the database cannot take the write now (SQLite locked by another writer, a
  PostgreSQL table locked for over LOCK_TIMEOUT_MS, a lost connection): the exporter retries both, as the
  specification has it.

Errors carry a google.rpc.Status in the request's encoding. The token is sent as OTel exporters send headers
(OTEL_EXPORTER_OTLP_HEADERS="Authorization=Bearer icw_..."), or as `x-icewater-token`. CSRF-exempt: a browser's
session is never accepted here, only a token.
"""

from __future__ import annotations

import json
import zlib

from django.conf import settings
from django.core.cache import cache
from django.db import DatabaseError, OperationalError, connection, transaction
from django.http import HttpRequest, HttpResponse
from django.utils import timezone
from django.views.decorators.csrf import csrf_exempt
from django.views.decorators.http import require_POST
from kombu.exceptions import OperationalError as BrokerUnavailable
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import ExportTraceServiceRequest

from formats import otel_traces
from formats.otel_traces import JSON, PROTOBUF, RequestRefused
from formats.tasks import finish_traces
from formats.trace_outputs import store_spans, waiting_spans

from .auth import ApiError, bearer_secret, checked_token
from .models import GateToken, TokenScope
from .strict_json import BodyRefused, parse_json_body

# google.rpc.Code values for the Status body (the OTLP specification leaves the choice to the server).
INVALID_ARGUMENT, PERMISSION_DENIED, RESOURCE_EXHAUSTED, UNAVAILABLE, UNAUTHENTICATED = 3, 7, 8, 14, 16
BUSY_RETRY_AFTER_S = 30
DATABASE_RETRY_AFTER_S = 5
LOCK_TIMEOUT_MS = 3000
NO_TOKEN = (
    "send a traces token as OTEL_EXPORTER_OTLP_HEADERS='Authorization=Bearer icw_...' "
    "(a lead creates one with the traces scope on the gate page, /api/gates/)"
)


class Refusal(Exception):
    def __init__(self, status: int, code: int, message: str, retry_after: int | None = None) -> None:
        super().__init__(message)
        self.status, self.code, self.message, self.retry_after = status, code, message, retry_after


@csrf_exempt
@require_POST
def receive_traces(request: HttpRequest) -> HttpResponse:
    encoding = JSON if request.content_type == JSON else PROTOBUF
    try:
        token = _token(request)
        if request.content_type not in (PROTOBUF, JSON):
            raise Refusal(415, INVALID_ARGUMENT, f"send {PROTOBUF} or {JSON}, not {request.content_type!r}")
        body = _body(request)
        binding = token.trace_binding
        assert binding is not None  # checked_token refuses a traces token without one of its workspace
        try:
            read = otel_traces.read_spans(
                _export_request(body, request.content_type), max_span_bytes=settings.ICEWATER_OTLP_MAX_SPAN_BYTES
            )
        except RequestRefused as exc:
            raise Refusal(400, INVALID_ARGUMENT, str(exc)) from None
        try:
            with transaction.atomic():
                if connection.vendor == "postgresql":
                    # A table locked for longer (a migration, a VACUUM FULL) is a 503 the exporter retries, not a
                    # request that hangs past the exporter's own timeout (10 s by default).
                    with connection.cursor() as cursor:
                        cursor.execute(f"SET LOCAL lock_timeout = {LOCK_TIMEOUT_MS}")
                if waiting_spans(binding.pk) >= settings.ICEWATER_OTLP_MAX_WAITING_SPANS:
                    raise Refusal(
                        429,
                        RESOURCE_EXHAUSTED,
                        f"{settings.ICEWATER_OTLP_MAX_WAITING_SPANS:,} spans already wait for their traces to "
                        "finish (is a Celery worker running? manage.py finish_traces finishes them); retry later",
                        BUSY_RETRY_AFTER_S,
                    )
                stored = store_spans(binding=binding, spans=read.spans)
                if stored.staged:
                    transaction.on_commit(lambda: _schedule_finish(binding.pk))
                GateToken.objects.filter(pk=token.pk).update(last_used_at=timezone.now())
        except OperationalError:  # SQLite's "database is locked", a lock timeout, a lost connection: nothing written
            raise Refusal(
                503, UNAVAILABLE, "the database cannot take spans right now; retry", DATABASE_RETRY_AFTER_S
            ) from None
    except Refusal as refusal:
        return _status_answer(refusal, encoding)
    reasons = list(read.reasons)
    if stored.late:
        # Rejected as the specification means it: not accepted into any output. Sending them again changes
        # nothing, and the exporter does not retry a partial success.
        reasons.append(
            f"{stored.late} span(s) came after their trace was finished (its root was in and no span of it had come "
            f"for ICEWATER_OTLP_QUIET_SECONDS = {settings.ICEWATER_OTLP_QUIET_SECONDS:g} s) and are in no output"
        )
    return HttpResponse(
        otel_traces.answer(rejected=read.rejected + stored.late, message="; ".join(reasons), content_type=encoding),
        content_type=encoding,
    )


def _token(request: HttpRequest) -> GateToken:
    secret = bearer_secret(request)
    if secret is None:
        secret = request.headers.get("x-icewater-token", "").strip()
    tokens = GateToken.objects.select_related("trace_binding__eval_set")
    try:
        return checked_token(secret, TokenScope.TRACES, no_token=NO_TOKEN, tokens=tokens)
    except ApiError as exc:
        raise Refusal(exc.status, UNAUTHENTICATED if exc.status == 401 else PERMISSION_DENIED, exc.message) from None


def _export_request(body: bytes, content_type: str) -> ExportTraceServiceRequest:
    """The export request in either OTLP/HTTP encoding; RequestRefused when it cannot be read."""
    if content_type == PROTOBUF:
        return otel_traces.parse_protobuf(body)
    try:
        # The API's one reader of JSON bodies: a key twice is refused (json.loads keeps the last, and protobuf's
        # parser never sees the first), and so is nesting past 64 levels, before any parser recurses. A NUL is
        # left to otel_traces._no_nul, as in protobuf bodies: a trace's texts are replaced, not its batch refused.
        value = parse_json_body(body, keep_nul=True)
    except BodyRefused as exc:
        raise RequestRefused(f"the body was refused: {exc}") from None
    return otel_traces.parse_json(value)


def _body(request: HttpRequest) -> bytes:
    """The body, decompressed; Refusal 413 over the upload limit (before and after decompressing), 415 for an
    encoding other than gzip, 400 for broken gzip."""
    limit = settings.ICEWATER_UPLOAD_MAX_BYTES
    too_large = Refusal(
        413,
        RESOURCE_EXHAUSTED,
        f"the body is over {limit:,} bytes (compressed or not); export smaller batches "
        "(OTEL_BSP_MAX_EXPORT_BATCH_SIZE)",
    )
    try:
        length = int(request.headers.get("Content-Length") or 0)
    except ValueError:
        raise Refusal(400, INVALID_ARGUMENT, "the Content-Length header is not a number") from None
    encoding = request.headers.get("Content-Encoding", "identity").strip().lower()
    if encoding not in ("identity", "gzip", ""):
        raise Refusal(415, INVALID_ARGUMENT, f"send the body as it is or gzip-compressed, not {encoding!r}")
    if length > limit:
        raise too_large
    # Read from the stream (not request.body) so that this limit decides, and one byte more to catch a body
    # longer than its Content-Length.
    body = request.read(limit + 1)
    if len(body) > limit:
        raise too_large
    if encoding != "gzip":
        return body
    inflater = zlib.decompressobj(16 + zlib.MAX_WBITS)
    try:
        # At most limit + 1 bytes ever come out, whatever the ratio: a gzip bomb stops here.
        plain = inflater.decompress(body, limit + 1)
    except zlib.error as exc:
        raise Refusal(400, INVALID_ARGUMENT, f"the body is not valid gzip ({exc})") from None
    if len(plain) > limit or inflater.unconsumed_tail:
        raise too_large
    if not inflater.eof:
        raise Refusal(400, INVALID_ARGUMENT, "the gzip body ends before its end")
    return plain


def _schedule_finish(binding_id: int) -> None:
    # One scheduled finisher per token and quiet period is enough (it reschedules itself while spans wait);
    # cache.add is atomic, so concurrent exports schedule it once.
    quiet = settings.ICEWATER_OTLP_QUIET_SECONDS
    if cache.add(f"icewater:otlp-finish:{binding_id}", 1, timeout=quiet + 1):
        try:
            finish_traces.apply_async((binding_id,), countdown=quiet + 1)
        except (OSError, DatabaseError, BrokerUnavailable):  # no broker: the spans wait for manage.py finish_traces
            cache.delete(f"icewater:otlp-finish:{binding_id}")


def _status_answer(refusal: Refusal, encoding: str) -> HttpResponse:
    if encoding == JSON:
        body = json.dumps({"code": refusal.code, "message": refusal.message}).encode()
    else:
        body = _status_protobuf(refusal.code, refusal.message)
    response = HttpResponse(body, status=refusal.status, content_type=encoding)
    if refusal.retry_after is not None:
        response["Retry-After"] = str(refusal.retry_after)
    return response


def _status_protobuf(code: int, message: str) -> bytes:
    """google.rpc.Status {code = 1; message = 2} written by hand: its generated class lives in
    googleapis-common-protos, a package the server does not otherwise need."""
    text = message.encode()
    return b"\x08" + _varint(code) + b"\x12" + _varint(len(text)) + text


def _varint(n: int) -> bytes:
    out = bytearray()
    while True:
        byte, n = n & 0x7F, n >> 7
        out.append(byte | (0x80 if n else 0))
        if not n:
            return bytes(out)
