"""Keep PostgreSQL's planner statistics fresh after a large import.

A table analyzed while empty keeps "0 rows" statistics until autovacuum comes
round; a report run right after a bulk import then plans nested full scans and
can take minutes (measured by the calibration benchmark). ANALYZE samples a
fixed number of rows, so it costs well under a second even on large tables.
"""

from __future__ import annotations

from django.db import connection

# Below this many new rows the existing statistics are close enough and autovacuum catches up.
ANALYZE_AFTER_ROWS = 5_000


def analyze_after_import(rows_written: int, *models) -> None:
    if rows_written >= ANALYZE_AFTER_ROWS:
        analyze(*models)


def analyze(*models) -> None:
    """ANALYZE the models' tables now (PostgreSQL; SQLite's planner keeps no such statistics).

    Inside a transaction the sample includes the transaction's own new rows, which autovacuum cannot see
    until it commits.
    """
    if connection.vendor != "postgresql":
        return
    with connection.cursor() as cursor:
        for model in models:
            cursor.execute(f"ANALYZE {connection.ops.quote_name(model._meta.db_table)}")  # noqa: S608 - table names come from our models
