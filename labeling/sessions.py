"""Database sessions (Django's db backend), with the per-request read written as one SQL statement.

Every signed-in request reads its session row. Through the ORM that read costs several times more
CPU building the query than the database spends answering it, on every page, save and submit.
Only that read changes: the same table, the same row, the same expiry condition. Sessions stay on
the server, so they stay revocable there: logging out deletes the row and the next request with
the old cookie finds nothing (tests/test_labeling_sessions.py). Creating, saving, rotating and
deleting sessions are Django's own code, unchanged.
"""

from __future__ import annotations

from django.contrib.sessions.backends.db import SessionStore as DatabaseSessionStore
from django.db import connections, router
from django.utils import timezone


class SessionStore(DatabaseSessionStore):
    def _get_session_from_db(self):
        """The unexpired session with this key, or None (and the key forgotten), as Django's does."""
        model = self.model
        connection = connections[router.db_for_read(model)]
        now = connection.ops.adapt_datetimefield_value(timezone.now())
        with connection.cursor() as cursor:
            cursor.execute(
                f"SELECT session_data FROM {connection.ops.quote_name(model._meta.db_table)} "  # noqa: S608 - a table name
                "WHERE session_key = %s AND expire_date > %s",
                [self.session_key, now],
            )
            row = cursor.fetchone()
        if row is None:
            self._session_key = None
            return None
        return model(session_key=self.session_key, session_data=row[0])
