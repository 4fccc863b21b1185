"""Rows of hand-written SQL, read as prepared statements, and model instances made from them exactly as
a queryset converts its columns.

The few reads on every request's path (the session with its user, the annotation a page, save or
submit opens) are written out as SQL, because building them through the ORM cost more than running
them; `instance` keeps what they return ordinary model instances (Model.from_db, as querysets make
them), and `fetchone` runs them as prepared statements on PostgreSQL, because planning them at every
request cost more again than running them.
"""

from __future__ import annotations

from functools import cache

from django.db import connections
from django.db.models.base import ModelState
from django.db.models.signals import post_init, pre_init


def fetchone(connection, sql: str, params: list) -> tuple | None:
    """The first row of `sql`, run on `connection` (a Django connection wrapper) as a prepared statement when
    it is PostgreSQL with prepared statements on (settings: ICEWATER_DB_PREPARED), as a plain query otherwise.

    Prepared per connection by psycopg on first use (server-side binding, keyed by the text and the
    parameter types), then only executed: the plan is made once per connection, not per request. The
    cursor is Django's wrapper all the same, so errors are Django's. While Django logs queries (DEBUG,
    assertNumQueries) the statement runs unprepared: psycopg does not keep a prepared statement's
    text where Django's log reads it, and a log of None would hide what ran.
    """
    if (
        connection.vendor != "postgresql"
        or connection.settings_dict["OPTIONS"].get("prepare_threshold") is None
        or connection.queries_logged
    ):
        with connection.cursor() as cursor:
            cursor.execute(sql, params)
            return cursor.fetchone()
    from django.db.backends.postgresql.base import ServerBindingCursor

    connection.ensure_connection()
    connection.validate_thread_sharing()
    with connection.wrap_database_errors:
        raw = ServerBindingCursor(connection.connection)
    with connection.make_cursor(raw) as cursor:
        cursor.execute(sql, params)
        return cursor.fetchone()


def instance(model, fields: list, values, alias: str = "default"):
    """`model` from the values of its `fields` (concrete fields, in the model's order), as read from database
    `alias`; the model's other fields are deferred (the ORM loads them if something asks).

    What Model.from_db makes, without running Model.__init__ when no pre_init or post_init receiver
    listens for `model`: __init__ only sets each value as an attribute, and the page's statements bring
    seven instances a request (tests/test_labeling_rows.py compares the two, field by field).
    """
    connection = connections[alias]
    names = tuple(f.attname for f in fields)
    converted = list(values)
    for i, col, converters in _converters(model, names, alias):
        value = converted[i]
        for converter in converters:
            value = converter(value, col, connection)
        converted[i] = value
    if pre_init.has_listeners(model) or post_init.has_listeners(model):
        return model.from_db(alias, names, converted)
    new = object.__new__(model)
    state = new._state = ModelState()
    state.adding, state.db = False, alias
    new.__dict__.update(zip(names, converted, strict=True))
    return new


@cache
def _converters(model, names: tuple[str, ...], alias: str) -> list[tuple]:
    # (position, column, converters) of the fields that have any: the same lists the ORM builds per query,
    # built once per process here (most fields, on PostgreSQL, have none).
    connection = connections[alias]
    found = []
    by_attname = {f.attname: f for f in model._meta.concrete_fields}
    for i, name in enumerate(names):
        field = by_attname[name]
        col = field.get_col(model._meta.db_table)
        converters = connection.ops.get_db_converters(col) + field.get_db_converters(connection)
        if converters:
            found.append((i, col, converters))
    return found
