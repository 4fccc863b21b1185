"""Keep PostgreSQL's planner statistics fresh after a large import.

A table analyzed while empty keeps "0 rows" statistics until autovacuum comes
round; a report run right after a bulk import then plans nested full scans and
can take minutes (measured by the calibration benchmark). ANALYZE samples a
fixed number of rows, so it costs well under a second even on large tables.

Only the columns a query filters, joins or groups on are analyzed: a transcript's text or a JSON
value steers no plan, and reading and sorting 30,000 of them was most of ANALYZE's time (0.47 s of
a 2.5 s import of 40,000 outputs, bench/import.py).
"""

from __future__ import annotations

from django.db import connection, models

# Below this many new rows the existing statistics are close enough and autovacuum catches up.
ANALYZE_AFTER_ROWS = 5_000


def analyze_after_import(rows_written: int, *tables) -> None:
    if rows_written >= ANALYZE_AFTER_ROWS:
        analyze(*tables)


def analyze(*tables) -> None:
    """ANALYZE the models' tables now (PostgreSQL; SQLite's planner keeps no such statistics).

    Inside a transaction the sample includes the transaction's own new rows, which autovacuum cannot see
    until it commits.
    """
    if connection.vendor != "postgresql":
        return
    quote = connection.ops.quote_name
    with connection.cursor() as cursor:
        for model in tables:
            columns = ", ".join(quote(column) for column in planned_columns(model))
            # Table and column names come from our models.
            cursor.execute(f"ANALYZE {quote(model._meta.db_table)} ({columns})")  # noqa: S608


def planned_columns(model) -> list[str]:
    """The model's columns but its free text and JSON ones (the table's row count is refreshed anyway)."""
    return [
        field.column
        for field in model._meta.concrete_fields
        if not isinstance(field, models.TextField | models.JSONField)
    ]
