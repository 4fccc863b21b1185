"""Django's PostgreSQL backend with a health check that costs no round trip when the connection is idle and sound.

Connections persist across requests (CONN_MAX_AGE), and CONN_HEALTH_CHECKS makes Django check a reused one at the
start of each request, so that a worker whose connection the database dropped (a restart, a failover, an idle
timeout, pg_terminate_backend) reconnects instead of answering a 500 (tests/config/test_db_reconnect.py). Django's
check is a `SELECT 1`: one round trip in every request. With a hundred annotators on four workers of a busy machine
each round trip waits for a core twice (the database's process, then the worker), and that one was one of a
save's nine (docs/labeling.md, Load).

Between requests nothing is owed on the connection: every answer was read to its end. So its socket has something
to read only when the server spoke on its own, and a server that drops a connection does: it sends its FATAL
message and closes (an end of file is readable too). A readable socket gets Django's full check (SELECT 1, which
fails on a dropped connection and makes Django reconnect); a quiet one is taken as sound without a round trip. A
connection that died without a word (a host gone from the network) is not seen here, nor by SELECT 1 in time: it
waits for TCP's timeout either way.
"""

from __future__ import annotations

import select

from django.db.backends.postgresql import base


class DatabaseWrapper(base.DatabaseWrapper):
    def is_usable(self) -> bool:
        if self.connection is None or self.connection.closed:
            return False
        try:
            readable, _, _ = select.select([self.connection.fileno()], [], [], 0)
        except (OSError, ValueError):  # the socket itself is gone
            return False
        return super().is_usable() if readable else True
