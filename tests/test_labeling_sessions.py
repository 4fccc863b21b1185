"""Sessions stay in the database and revocable there; labeling.sessions reads a session and its user in one
query, and Django's own checks (labeling.auth) still decide who is signed in. The benchmark's signed-in floor
(/hello) is behind the same login as every page."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.contrib.auth import SESSION_KEY
from django.test import Client
from django.urls import reverse
from django.utils import timezone

from labeling import sessions
from labeling.models import Session
from labeling.sessions import SessionStore

from .factories import password_login
from .labeling_helpers import fast_passwords  # noqa: F401 - an autouse fixture

pytestmark = pytest.mark.django_db


def test_a_session_round_trips_and_keeps_who_is_signed_in_in_a_column(annotator):
    store = SessionStore()
    store["question"] = "six by nine"
    store.save()
    assert SessionStore(store.session_key).load() == {"question": "six by nine"}
    assert Session.objects.get(session_key=store.session_key).user_id is None
    store[SESSION_KEY] = str(annotator.pk)
    store.save()
    assert Session.objects.get(session_key=store.session_key).user_id == annotator.pk
    reread = SessionStore(store.session_key)
    reread.load()
    assert reread.preloaded_user.pk == annotator.pk and reread.preloaded_user.username == annotator.username


def test_a_session_whose_user_id_is_not_a_number_saves_without_a_user():
    store = SessionStore()
    store[SESSION_KEY] = "not-a-number"
    store.save()
    assert Session.objects.get(session_key=store.session_key).user_id is None


def test_an_expired_or_unknown_session_is_empty_and_forgotten():
    store = SessionStore()
    store["x"] = 1
    store.save()
    Session.objects.filter(session_key=store.session_key).update(expire_date=timezone.now() - timedelta(seconds=1))
    expired = SessionStore(store.session_key)
    assert expired.load() == {} and expired.session_key is None
    unknown = SessionStore("no-such-session-key-0123456789abc")
    assert unknown.load() == {} and unknown.session_key is None


def test_a_deactivated_account_is_signed_out_at_its_next_request(client, annotator):
    assert password_login(client, "ann", "pw-for-tests-1")
    assert client.get(reverse("labeling:hello")).status_code == 200
    type(annotator).objects.filter(pk=annotator.pk).update(is_active=False)
    response = client.get(reverse("labeling:hello"))
    assert response.status_code == 302 and response["Location"].startswith(reverse("login"))


def test_changing_the_password_ends_the_other_sessions(client, annotator):
    assert password_login(client, "ann", "pw-for-tests-1")
    annotator.set_password("a-new-password-2")
    annotator.save()
    response = client.get(reverse("labeling:hello"))
    assert response.status_code == 302 and response["Location"].startswith(reverse("login"))


def test_a_session_row_pointing_at_another_user_does_not_sign_in_as_them(client, annotator, lead):
    # The column only saves a query; the signed session data says who is signed in, and the hash check
    # still runs on the user it names.
    assert password_login(client, "ann", "pw-for-tests-1")
    Session.objects.filter(session_key=client.cookies["sessionid"].value).update(user_id=lead.pk)
    response = client.get(reverse("labeling:hello"))
    assert response.status_code == 200
    assert response.wsgi_request.user.pk == annotator.pk


def test_deleting_a_user_deletes_their_sessions(client, annotator):
    assert password_login(client, "ann", "pw-for-tests-1")
    key = client.cookies["sessionid"].value
    annotator.delete()
    assert not Session.objects.filter(session_key=key).exists()
    response = client.get(reverse("labeling:hello"))
    assert response.status_code == 302


def test_logging_out_revokes_the_session_on_the_server(client, annotator):
    assert password_login(client, "ann", "pw-for-tests-1")
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
    with django_assert_num_queries(1):  # the session with its user, nothing else
        response = client.get(reverse("labeling:hello"))
    assert response.status_code == 200 and response.content == b"hello"
    assert client.post(reverse("labeling:hello")).status_code == 405


def test_decoded_sessions_are_remembered_by_their_signed_text_and_handed_out_as_copies(caplog):
    store = SessionStore()
    store["question"] = "six by nine"
    store["answers"] = [42]
    store.save()
    text = Session.objects.get(session_key=store.session_key).session_data
    first = SessionStore().decode(text)
    assert first == {"question": "six by nine", "answers": [42]} and text in sessions._DECODED
    first["answers"].append(54)  # a caller changing its copy changes nobody else's
    assert SessionStore().decode(text) == {"question": "six by nine", "answers": [42]}

    store["question"] = "life"
    store.save()  # changed data is other text, decoded afresh
    changed = Session.objects.get(session_key=store.session_key).session_data
    assert changed != text and SessionStore(store.session_key).load()["question"] == "life"

    # Negative control: text with a bad signature is refused (and logged) every time, never remembered.
    forged = text[:-3] + ("AAA" if not text.endswith("AAA") else "BBB")
    for _ in range(2):
        assert SessionStore().decode(forged) == {}
    assert forged not in sessions._DECODED
    assert [r.getMessage() for r in caplog.records].count("Session data corrupted") == 2
