"""The workspace's audit log (/members/log/): its leads read the decisions that matter, newest first, filtered by
action, and take them away as CSV or JSON lines. Only the request's workspace's events, ever."""

from __future__ import annotations

import csv
import io
import json
from collections.abc import Iterator

from django.core.exceptions import BadRequest
from django.core.paginator import Paginator
from django.core.serializers.json import DjangoJSONEncoder
from django.db.models import QuerySet
from django.http import HttpResponse, StreamingHttpResponse
from django.shortcuts import render
from django.utils.http import urlencode
from django.views.decorators.cache import never_cache
from django.views.decorators.http import require_GET

from evals.access import AuthenticatedHttpRequest, checked_query, role_required
from evals.csv_cells import csv_safe
from evals.downloads import attachment_header
from evals.models import AuditAction, AuditEvent, Role
from evals.workspaces import in_workspace

EVENTS_PER_PAGE = 50
EXPORT_COLUMNS = ("created_at", "actor", "action", "summary", "detail")
EXPORT_FORMATS = {"csv": "text/csv; charset=utf-8", "jsonl": "application/jsonl; charset=utf-8"}


def _events(request: AuthenticatedHttpRequest) -> tuple[QuerySet[AuditEvent], str]:
    """The workspace's events, of the action the address names (any, when it names none); an unknown one is a 400."""
    action = checked_query(request.GET).get("action", "")
    events = in_workspace(AuditEvent, request.workspace)
    if not action:
        return events, ""
    if action not in AuditAction.values:
        raise BadRequest(f"No action is called {action!r}; the actions: {', '.join(AuditAction.values)}.")
    return events.filter(action=action), action


@never_cache
@require_GET
@role_required(Role.LEAD)
def audit_log_page(request: AuthenticatedHttpRequest) -> HttpResponse:
    events, action = _events(request)
    page = Paginator(events, EVENTS_PER_PAGE).get_page(request.GET.get("page"))
    context = {
        "page": page,
        "events": page.object_list,
        "actions": AuditAction.choices,
        "action": action,
        "query": urlencode({"action": action}) if action else "",
    }
    return render(request, "overview/audit_log.html", context)


@never_cache
@require_GET
@role_required(Role.LEAD)
def audit_log_export(request: AuthenticatedHttpRequest) -> StreamingHttpResponse:
    events, action = _events(request)
    kind = request.GET.get("format", "csv")
    if kind not in EXPORT_FORMATS:
        raise BadRequest(f"No export format is called {kind!r}; the formats: {', '.join(EXPORT_FORMATS)}.")
    rows = events.values_list("created_at", "actor_name", "action", "summary", "detail").iterator(chunk_size=2000)
    lines = _csv_lines(rows) if kind == "csv" else _json_lines(rows)
    response = StreamingHttpResponse(lines, content_type=EXPORT_FORMATS[kind])
    name = f"audit-log-{request.workspace.slug}{f'-{action}' if action else ''}.{kind}"
    response["Content-Disposition"] = attachment_header(name)
    return response


def _csv_lines(rows: Iterator[tuple]) -> Iterator[str]:
    buffer = io.StringIO()
    writer = csv.writer(buffer)
    writer.writerow(EXPORT_COLUMNS)
    for created_at, actor, action, summary, detail in rows:
        cells = [created_at.isoformat(), actor, action, summary, json.dumps(detail, cls=DjangoJSONEncoder)]
        writer.writerow([csv_safe(cell) for cell in cells])  # names people wrote: never a spreadsheet formula
        yield buffer.getvalue()
        buffer.seek(0)
        buffer.truncate()
    yield buffer.getvalue()


def _json_lines(rows: Iterator[tuple]) -> Iterator[str]:
    for created_at, actor, action, summary, detail in rows:
        values = (created_at.isoformat(), actor, action, summary, detail)
        yield json.dumps(dict(zip(EXPORT_COLUMNS, values, strict=True)), cls=DjangoJSONEncoder) + "\n"
