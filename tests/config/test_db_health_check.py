"""The health check of a reused database connection (config/postgresql): no round trip while the connection is
idle and sound, Django's full check (SELECT 1, which fails) once the server has dropped it. The request-level
version, a real gunicorn whose connection is killed between two requests, is tests/config/test_db_reconnect.py."""

from __future__ import annotations

import time

import psycopg
import pytest
from django.db import connection
from django.db.backends.postgresql.base import DatabaseWrapper as DjangoWrapper

from tests.config.test_db_reconnect import database_url

pytestmark = [pytest.mark.postgres, pytest.mark.django_db(transaction=True)]


def test_the_engine_is_ours_on_postgresql():
    from django.db import connections

    from config.postgresql.base import DatabaseWrapper

    assert isinstance(connections["default"], DatabaseWrapper) and connection.vendor == "postgresql"


def test_a_sound_idle_connection_is_usable_without_a_round_trip(monkeypatch):
    connection.ensure_connection()
    asked = []
    monkeypatch.setattr(DjangoWrapper, "is_usable", lambda self: asked.append(1) or True)
    assert connection.is_usable()
    assert asked == []  # Django's SELECT 1 was not sent


def test_a_connection_the_server_dropped_is_unusable_and_checked_the_full_way(monkeypatch):
    connection.ensure_connection()
    with connection.cursor() as cursor:
        cursor.execute("SELECT pg_backend_pid()")
        [pid] = cursor.fetchone()
    with psycopg.connect(database_url(), autocommit=True) as other:
        other.execute("SELECT pg_terminate_backend(%s)", [pid])
    deadline = time.monotonic() + 10
    full_checks = []
    real = DjangoWrapper.is_usable
    monkeypatch.setattr(DjangoWrapper, "is_usable", lambda self: full_checks.append(1) or real(self))
    usable = True
    while usable and time.monotonic() < deadline:  # the server's goodbye reaches the socket
        usable = connection.is_usable()
        time.sleep(0.05)
    assert usable is False
    assert full_checks  # the socket had something to read: Django's check ran, and failed
    connection.close()
    connection.ensure_connection()  # and a new connection works
    assert connection.is_usable()
