"""Run as a module (`python -m tests.otel_sqlite_locked`), not collected: the traces receiver
and finisher on the embedded default (SQLite, the broker on
the file system) while another connection holds SQLite's write lock, as a long import or a second worker does.

Prints one JSON line of what happened. Used by tests/formats/test_otel_sqlite.py with
DATABASE_URL=sqlite:///<file>?timeout=1 (a writer waits 1 s for the lock, not 20).
"""

from __future__ import annotations

import json
import os
import sqlite3
import sys
from pathlib import Path

import django

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

TOKEN = "icw_sqlite-locked-test"


def main() -> None:
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
    django.setup()
    from django.conf import settings
    from django.core.management import CommandError, call_command
    from django.db import connection
    from django.test import Client
    from google.rpc.status_pb2 import Status

    from api.models import GateToken, TokenScope, hash_token
    from evals.models import EvalSet, Membership, Output, Rubric, RubricVersion, User, Workspace
    from formats.models import TraceBinding, TraceSpan
    from formats.tasks import finish_traces
    from tests.otel_helpers import PROTOBUF, URL, export, refund_trace

    call_command("migrate", verbosity=0)
    workspace, _ = Workspace.objects.get_or_create(slug="default", defaults={"name": "Default workspace"})
    lead = User.objects.create(username="sqlite-lead")
    Membership.objects.create(user=lead, workspace=workspace, role="lead")
    rubric_version = RubricVersion.objects.create(
        rubric=Rubric.objects.create(name="r", workspace=workspace), version="1", instruction="Grade it.",
        content_hash="x",
    )  # fmt: skip
    eval_set = EvalSet.objects.create(name="sqlite-traces", workspace=workspace)
    binding = TraceBinding.objects.create(eval_set=eval_set)
    GateToken.objects.create(
        workspace=workspace, project="p", rubric_version=rubric_version, scopes=[TokenScope.TRACES],
        trace_binding=binding, token_hash=hash_token(TOKEN), hint=TOKEN[:8], created_by=lead,
    )  # fmt: skip
    connection.close()

    client = Client()
    body = export(refund_trace()).SerializeToString()
    report: dict = {}

    def post():
        return client.post(URL, data=body, content_type=PROTOBUF, HTTP_AUTHORIZATION=f"Bearer {TOKEN}")

    other = sqlite3.connect(settings.DATABASES["default"]["NAME"], isolation_level=None)
    other.execute("BEGIN IMMEDIATE")  # the write lock, held
    locked = post()
    status = Status()
    status.ParseFromString(locked.content)
    report["locked_export"] = [locked.status_code, locked.get("Retry-After"), status.message]
    report["spans_after_locked_export"] = TraceSpan.objects.count()
    other.execute("ROLLBACK")

    report["free_export"] = post().status_code
    report["spans_after_free_export"] = TraceSpan.objects.count()

    queue = Path(settings.CELERY_BROKER_TRANSPORT_OPTIONS["data_folder_in"])
    other.execute("BEGIN IMMEDIATE")
    try:
        call_command("finish_traces", "--now", verbosity=0)
        report["command_error"] = None
    except CommandError as exc:
        report["command_error"] = str(exc)
    report["outputs_while_locked"] = Output.objects.count()
    queued_before = len(list(queue.iterdir()))
    finish_traces(binding.pk)  # the worker's task, run here: it must leave the spans and try again later
    report["task_messages_queued"] = len(list(queue.iterdir())) - queued_before
    report["spans_while_locked"] = TraceSpan.objects.count()
    other.execute("ROLLBACK")

    call_command("finish_traces", "--now", verbosity=0)
    report["outputs_once_free"] = Output.objects.count()
    report["spans_once_free"] = TraceSpan.objects.count()
    print(json.dumps(report))


if __name__ == "__main__":
    sys.exit(main())
