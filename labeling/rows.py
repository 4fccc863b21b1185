"""Model instances from rows of hand-written SQL, converted exactly as a queryset converts its columns.

The few reads on every request's path (the session with its user, the annotation a save locks) are
written out as SQL, because building them through the ORM cost more than running them; this keeps what
they return ordinary model instances (Model.from_db, as querysets make them).
"""

from __future__ import annotations

from django.db import connections


def instance(model, fields: list, values, alias: str = "default"):
    """`model` from the values of its `fields` (in that order), as read from database `alias`."""
    connection = connections[alias]
    converted = []
    for field, value in zip(fields, values, strict=True):
        col = field.get_col(model._meta.db_table)
        for converter in connection.ops.get_db_converters(col) + field.get_db_converters(connection):
            value = converter(value, col, connection)
        converted.append(value)
    return model.from_db(alias, [f.attname for f in fields], converted)
