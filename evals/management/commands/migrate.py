"""Django's migrate, which first records evals 0001 on a database from before the shared models moved.

django.contrib.admin's first migration depends on the user model's app (evals, since AUTH_USER_MODEL is
"evals.User"). A database made before the move has admin's migrations applied and evals' not, and Django
refuses to migrate it at all (InconsistentMigrationHistory) before running anything. evals 0001 only
describes, in the migration state, the tables labeling's migrations already made ("labeling_user", ...):
it changes nothing in the database, so once labeling 0010 is applied, recording it is exactly what running
it would do. Everything after it (the foreign keys in the state, the content types) then runs as usual.
"""

from __future__ import annotations

from django.core.management.commands.migrate import Command as DjangoMigrate
from django.db import DEFAULT_DB_ALIAS, connections
from django.db.migrations.recorder import MigrationRecorder

LAST_BEFORE_THE_MOVE = ("labeling", "0010_import_job")
STATE_ONLY = ("evals", "0001_initial")


def record_state_only_move(connection) -> bool:
    """Record evals 0001 where the old schema is there and it is not recorded; True if it was recorded."""
    recorder = MigrationRecorder(connection)
    if not recorder.has_table():
        return False  # a new database: migrate runs evals 0001 in its turn
    applied = recorder.applied_migrations()
    if STATE_ONLY in applied or LAST_BEFORE_THE_MOVE not in applied:
        return False
    recorder.record_applied(*STATE_ONLY)
    return True


class Command(DjangoMigrate):
    help = DjangoMigrate.help + " (Records evals 0001 first on a database from before the shared models moved.)"

    def handle(self, *args, **options):
        connection = connections[options.get("database") or DEFAULT_DB_ALIAS]
        if record_state_only_move(connection) and options.get("verbosity", 1) >= 1:
            self.stdout.write("Recorded evals.0001_initial: its tables are labeling's, already there.")
        return super().handle(*args, **options)
