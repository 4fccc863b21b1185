"""Run as a module (`python -m tests.sqlite_writers` from the checkout), not collected: as a script its folder would
come first on sys.path and tests/evals/ would stand in for the evals app. Several threads write through Django to
the database the environment names.

Each writer opens transactions that read and then write, as a label save does (read the annotation,
write its labels). Prints one JSON line: the errors the writers met, the rows written, the journal mode.
Used by tests/config/test_sqlite_concurrency.py with DATABASE_URL=sqlite:///<file>.
"""

from __future__ import annotations

import json
import os
import sys
import threading

import django

WRITERS = 8  # the 8 annotators of the load test that found the "database is locked" errors
TRANSACTIONS_PER_WRITER = 25


def write(writer: int, workspace_id: int, start: threading.Barrier, errors: list[str]) -> None:
    from django.db import DatabaseError, connection, transaction

    from evals.models import EvalSet

    start.wait()
    try:
        for i in range(TRANSACTIONS_PER_WRITER):
            try:
                with transaction.atomic():
                    EvalSet.objects.filter(workspace_id=workspace_id, name__startswith=f"writer-{writer}-").count()
                    EvalSet.objects.create(workspace_id=workspace_id, name=f"writer-{writer}-{i}")
            except DatabaseError as exc:
                errors.append(f"writer {writer}: {exc}")
    finally:
        connection.close()


def main() -> None:
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
    django.setup()
    from django.core.management import call_command
    from django.db import connection

    from evals.models import EvalSet, Workspace

    call_command("migrate", verbosity=0)
    workspace_id = Workspace.objects.create(slug="default", name="Default workspace").pk  # every eval set is in one
    connection.close()
    start = threading.Barrier(WRITERS)
    errors: list[str] = []
    threads = [threading.Thread(target=write, args=(w, workspace_id, start, errors)) for w in range(WRITERS)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    with connection.cursor() as cursor:
        cursor.execute("PRAGMA journal_mode")
        journal_mode = cursor.fetchone()[0]
    print(json.dumps({"errors": errors, "rows": EvalSet.objects.count(), "journal_mode": journal_mode}))


if __name__ == "__main__":
    sys.exit(main())
