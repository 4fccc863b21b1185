"""Moving the test database between migrations, for tests of a data migration.

A test takes the `migrator` fixture (tests/conftest.py: `migrate` below) and calls it with targets;
whatever happens in the test, the database is brought back to every app's newest migration afterwards, so
a failing or incomplete migration test cannot leave the tables that later tests expect missing.
"""

from __future__ import annotations

from django.db import connection
from django.db.migrations.executor import MigrationExecutor


def migrate(targets):
    """Migrate to `targets` ([(app, migration name)]) and return the historical models' registry there."""
    MigrationExecutor(connection).migrate(targets)
    return MigrationExecutor(connection).loader.project_state(targets).apps


def migrate_to_latest() -> None:
    """Every app's newest migration, as the next tests expect."""
    migrate(MigrationExecutor(connection).loader.graph.leaf_nodes())
