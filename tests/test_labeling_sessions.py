"""Sessions stay in the database and revocable there (labeling.sessions reads them with one SQL statement),
and the benchmark's signed-in floor (/hello) is behind the same login as every page."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.contrib.sessions.backends.db import SessionStore as DjangoStore
from django.contrib.sessions.models import Session
from django.test import Client
from django.urls import reverse
from django.utils import timezone

from labeling.sessions import SessionStore

from .labeling_helpers import fast_passwords  # noqa: F401 - an autouse fixture

pytestmark = pytest.mark.django_db


def test_it_reads_what_djangos_database_sessions_write_and_the_other_way_round():
    theirs = DjangoStore()
    theirs["answer"] = 42
    theirs.create()
    theirs.save()
    assert SessionStore(theirs.session_key).load() == {"answer": 42}
    ours = SessionStore()
    ours["question"] = "six by nine"
    ours.save()
    assert DjangoStore(ours.session_key).load() == {"question": "six by nine"}


def test_an_expired_or_unknown_session_is_empty_and_forgotten():
    store = SessionStore()
    store["x"] = 1
    store.save()
    Session.objects.filter(session_key=store.session_key).update(expire_date=timezone.now() - timedelta(seconds=1))
    expired = SessionStore(store.session_key)
    assert expired.load() == {} and expired.session_key is None
    unknown = SessionStore("no-such-session-key-0123456789abc")
    assert unknown.load() == {} and unknown.session_key is None


def test_logging_out_revokes_the_session_on_the_server(client, annotator):
    assert client.login(username="ann", password="pw-for-tests-1")
    stolen = client.cookies["sessionid"].value
    assert client.get(reverse("labeling:hello")).status_code == 200
    client.post(reverse("logout"))
    replay = Client()
    replay.cookies["sessionid"] = stolen
    response = replay.get(reverse("labeling:hello"))
    assert response.status_code == 302 and response["Location"].startswith(reverse("login"))


def test_the_signed_in_floor_needs_a_login_and_reads_no_data(client, annotator, django_assert_num_queries):
    anonymous = client.get(reverse("labeling:hello"))
    assert anonymous.status_code == 302 and anonymous["Location"].startswith(reverse("login"))
    client.force_login(annotator)
    with django_assert_num_queries(2):  # the session and the user, nothing else
        response = client.get(reverse("labeling:hello"))
    assert response.status_code == 200 and response.content == b"hello"
    assert client.post(reverse("labeling:hello")).status_code == 405
