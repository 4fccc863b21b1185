"""Signing out stays on the server: Django's database sessions (read through Redis where there is one), ended by
logging out, a password change, deactivation, and reactivation (which must never revive a session from before)."""

from __future__ import annotations

import pytest
from django.conf import settings
from django.contrib.sessions.models import Session
from django.test import Client
from django.urls import reverse

from evals.accounts import end_sessions
from evals.models import User
from tests.login_helpers import password_login

pytestmark = pytest.mark.django_db

PAGE = "labeling:my_work"  # any page behind the login


def signed_in(client: Client) -> bool:
    response = client.get(reverse(PAGE))
    assert response.status_code in (200, 302), response.status_code
    return response.status_code == 200


def logged_in_client(username: str = "ann") -> Client:
    client = Client()
    assert password_login(client, username)
    assert signed_in(client)
    return client


def test_sessions_are_djangos_own_rows_in_the_database(annotator):
    client = logged_in_client()
    session = Session.objects.get(session_key=client.cookies["sessionid"].value)
    assert session.get_decoded()["_auth_user_id"] == str(annotator.pk)


def test_a_deactivated_account_is_signed_out_at_its_next_request(annotator):
    client = logged_in_client()
    User.objects.filter(pk=annotator.pk).update(is_active=False)  # even without a save
    response = client.get(reverse(PAGE))
    assert response.status_code == 302 and response["Location"].startswith(reverse("login"))


def test_changing_the_password_ends_the_other_sessions(annotator):
    client = logged_in_client()
    annotator.set_password("a-new-password-2")
    annotator.save()
    assert not signed_in(client)


def test_logging_out_revokes_the_session_on_the_server(annotator):
    client = logged_in_client()
    stolen = client.cookies["sessionid"].value
    client.post(reverse("logout"))
    assert not Session.objects.filter(session_key=stolen).exists()
    replay = Client()
    replay.cookies["sessionid"] = stolen
    assert not signed_in(replay)


def test_a_deleted_accounts_session_signs_nobody_in(annotator):
    client = logged_in_client()
    annotator.delete()
    assert not signed_in(client)


def test_reactivating_an_account_does_not_revive_its_old_sessions(annotator, annotator2):
    client, other = logged_in_client("ann"), logged_in_client("ann2")
    annotator.is_active = False
    annotator.save()  # as the admin's change form does
    assert not signed_in(client)
    annotator.is_active = True
    annotator.save()
    assert not signed_in(client)  # the old cookie stays signed out
    assert signed_in(other)  # negative control: nobody else's session ended
    assert signed_in(logged_in_client("ann"))  # and the person signs in again as usual


def test_reactivating_after_a_deactivation_that_skipped_save_still_signs_the_old_session_out(annotator):
    client = logged_in_client()
    User.objects.filter(pk=annotator.pk).update(is_active=False)  # no signal: the session row stays
    annotator.refresh_from_db()
    annotator.is_active = True
    annotator.save()
    assert not signed_in(client)


def test_saving_other_fields_keeps_the_person_signed_in(annotator):
    client = logged_in_client()
    annotator.first_name = "Ann"
    annotator.save()
    annotator.save(update_fields=["last_name"])
    assert signed_in(client)


def test_sessions_are_read_through_redis_so_ending_one_clears_its_cached_copy(annotator):
    assert settings.SESSION_ENGINE == "django.contrib.sessions.backends.cached_db"  # the tests run with Redis
    client = logged_in_client()
    Session.objects.filter(session_key=client.cookies["sessionid"].value).delete()  # the row alone...
    assert signed_in(client)  # ...is not enough: the cached copy still signs in (why end_sessions uses the engine)
    other = logged_in_client()
    assert end_sessions(annotator.pk) == 1  # the other client's row (the first one's is gone)
    assert not signed_in(other)
