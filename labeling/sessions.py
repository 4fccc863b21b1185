"""Database sessions (Django's db backend) whose per-request read also brings the signed-in user.

Every signed-in request reads its session row and then its user: two queries, and through the ORM
the second costs several times more CPU building the query than the database spends answering it.
Here the session table (labeling.models.Session) keeps the signed-in user's id in a column, written
whenever Django saves the session, and the read is one SQL statement joining the user's row. The
user is only offered to the authentication backend (labeling.auth); Django's own checks decide,
unchanged: the id in the signed session data must match, the backend must be configured, the account
must be active, and the session's password hash must verify. Sessions stay on the server, so they
stay revocable there: logging out deletes the row (tests/test_labeling_sessions.py). Creating,
saving, rotating and deleting sessions are Django's own code.
"""

from __future__ import annotations

import copy
from functools import cache

from django.contrib.auth import SESSION_KEY
from django.contrib.sessions.backends.db import SessionStore as DatabaseSessionStore
from django.core.exceptions import ValidationError
from django.db import connections, router
from django.utils import timezone

from .rows import fetchone, instance

# Signed session text -> its decoded data (SessionStore.decode); bounded, per process.
_DECODED: dict[str, dict] = {}
_DECODED_MAX = 4096


class SessionStore(DatabaseSessionStore):
    # The user row read with the session, or None; see labeling.auth.
    preloaded_user = None
    # A read that rides along with the session's (read_along) and the row it brought (None if none matched).
    along: tuple[str, list, int] | None = None
    along_row: tuple | None = None

    @classmethod
    def get_model_class(cls):
        from .models import Session

        return Session

    def decode(self, session_data):
        """Django's decode (signature check, then JSON), remembered per process by the exact signed text.

        Decoding is a pure function of that text (and the secret key, fixed for the process): a session
        whose data changed has other text. Every signed-in request decodes its session, and the
        signature check cost ~0.3 ms of a page's CPU (measured). Only good sessions are remembered (a
        corrupted one is decoded, and logged, every time); each caller gets its own copy to change.
        """
        decoded = _DECODED.get(session_data)
        if decoded is None:
            decoded = super().decode(session_data)
            if not decoded:
                return decoded
            if len(_DECODED) >= _DECODED_MAX:
                _DECODED.clear()  # crude, and rare: a process sees few sessions, and they change seldom
            _DECODED[session_data] = decoded
        return copy.deepcopy(decoded)

    def create_model_instance(self, data):
        session = super().create_model_instance(data)
        session.user_id = _user_id(data.get(SESSION_KEY))
        return session

    def _get_session_from_db(self):
        """The unexpired session with this key, or None (and the key forgotten), as Django's does."""
        model = self.model
        alias = router.db_for_read(model)
        connection = connections[alias]
        fields, columns = _user_columns(alias)
        user_table = connection.ops.quote_name(model._meta.get_field("user").related_model._meta.db_table)
        now = connection.ops.adapt_datetimefield_value(timezone.now())
        along, params, width = self.along or ("", [], 0)
        if along:
            columns += "".join(f", x.c{i}" for i in range(width))
            along = f"LEFT JOIN LATERAL ({along}) x ON TRUE "
        row = fetchone(
            connection,
            f"SELECT s.session_data, {columns} FROM {connection.ops.quote_name(model._meta.db_table)} s "  # noqa: S608 - names from the models
            f"LEFT JOIN {user_table} u ON u.id = s.user_id {along}"
            "WHERE s.session_key = %s AND s.expire_date > %s",
            [*params, self.session_key, now],
        )
        if row is None:
            self._session_key = None
            return None
        self.preloaded_user = _user(alias, fields, row[1 : 1 + len(fields)])
        if width and row[1 + len(fields)] is not None:  # its first column is a primary key: NULL means no row
            self.along_row = row[1 + len(fields) :]
        return model(session_key=self.session_key, session_data=row[0])


def read_along(session, read: tuple[str, list, int] | None) -> None:
    """Have `read` ride along with `session`'s read from the database, in the same statement and round trip:
    (sql, params, width), a one-row SELECT naming its columns c0..c<width-1>, in which `s.user_id` is the
    session's user (a LATERAL subquery of the session read). Its row, if any, is `session.along_row` after the
    session is read. Nothing happens when the session is already read, is not this module's, or `read` is None:
    the caller reads on its own then.

    Why: each round trip to the database costs a wake-up of the database process and of this one, and the
    labeling page otherwise makes two (its session, then its annotation). The row is only a candidate: the
    caller still checks it belongs to the user Django's authentication then accepts (guards.own_annotation).
    """
    if read is not None and isinstance(session, SessionStore) and not hasattr(session, "_session_cache"):
        session.along = read


def _user_id(value) -> int | None:
    from .models import User

    try:
        return User._meta.pk.to_python(value) if value is not None else None
    except ValidationError:
        return None


@cache
def _user_columns(alias: str) -> tuple[list, str]:
    """The user's concrete fields and their columns in the joined read (prefixed u.)."""
    from .models import User

    fields = list(User._meta.concrete_fields)
    quote = connections[alias].ops.quote_name
    return fields, ", ".join(f"u.{quote(f.column)}" for f in fields)


def _user(alias: str, fields: list, values) -> object | None:
    """A User from the joined columns (None when nobody is signed in)."""
    from .models import User

    return None if values[0] is None else instance(User, fields, values, alias)
