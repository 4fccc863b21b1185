"""Model instances from rows of hand-written SQL, converted exactly as a queryset converts its columns.

The few reads on every request's path (the session with its user, the annotation a page, save or
submit opens) are written out as SQL, because building them through the ORM cost more than running
them; this keeps what they return ordinary model instances (Model.from_db, as querysets make them).
"""

from __future__ import annotations

from functools import cache

from django.db import connections


def instance(model, fields: list, values, alias: str = "default"):
    """`model` from the values of its `fields` (concrete fields, in the model's order), as read from database
    `alias`; the model's other fields are deferred (the ORM loads them if something asks)."""
    connection = connections[alias]
    names = tuple(f.attname for f in fields)
    converted = list(values)
    for i, col, converters in _converters(model, names, alias):
        value = converted[i]
        for converter in converters:
            value = converter(value, col, connection)
        converted[i] = value
    return model.from_db(alias, names, converted)


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
