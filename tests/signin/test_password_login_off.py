"""ICEWATER_PASSWORD_LOGIN=0: the login page shows only the company sign-in, and a password is refused at the
login page and at the admin's before any check (so not even a right one signs in, and axes counts nothing)."""

from __future__ import annotations

import pytest
from axes.models import AccessAttempt
from django.test import override_settings

from tests.oidc_helpers import CLIENT_ID, CLIENT_SECRET

pytestmark = pytest.mark.django_db

PASSWORD = "a-long-password"
# No provider runs: these pages never reach it.
PROVIDER = {
    "ICEWATER_OIDC_ISSUER": "http://127.0.0.1:9",
    "ICEWATER_OIDC_CLIENT_ID": CLIENT_ID,
    "ICEWATER_OIDC_CLIENT_SECRET": CLIENT_SECRET,
}


@pytest.fixture
def lead(django_user_model):
    return django_user_model.objects.create_superuser("lena", password=PASSWORD)


def test_with_password_sign_in_off_the_login_page_shows_only_the_company_button(client):
    with override_settings(**PROVIDER, ICEWATER_PASSWORD_LOGIN=False):
        page = client.get("/accounts/login/?next=/progress/").content.decode()
    assert 'class="button primary company-sign-in" href="/oidc/start/?next=/progress/"' in page
    assert 'name="password"' not in page and "Demo accounts" not in page


def test_with_both_on_the_page_offers_both(client):
    with override_settings(**PROVIDER, ICEWATER_PASSWORD_LOGIN=True):
        page = client.get("/accounts/login/").content.decode()
    assert "company-sign-in" in page and 'name="password"' in page


@pytest.mark.parametrize("target", ["/accounts/login/", "/admin/login/"])
def test_a_right_password_is_refused_when_password_sign_in_is_off(client, lead, target):
    with override_settings(**PROVIDER, ICEWATER_PASSWORD_LOGIN=False):
        answer = client.post(target, {"username": "lena", "password": PASSWORD})
    assert answer.status_code == 403
    assert "Password sign-in is off here" in answer.content.decode()
    assert "_auth_user_id" not in client.session
    assert not AccessAttempt.objects.exists()


@pytest.mark.parametrize("target", ["/accounts/login/", "/admin/login/"])
def test_the_control_the_same_password_signs_in_when_password_sign_in_is_on(client, lead, target):
    answer = client.post(target, {"username": "lena", "password": PASSWORD, "next": "/admin/"})
    assert answer.status_code == 302
    assert client.session["_auth_user_id"] == str(lead.pk)


def test_the_admins_login_page_sends_to_the_company_sign_in_when_passwords_are_off(client):
    with override_settings(**PROVIDER, ICEWATER_PASSWORD_LOGIN=False):
        answer = client.get("/admin/login/?next=/admin/evals/user/")
    assert answer.status_code == 302
    assert answer["Location"] == "/accounts/login/?next=%2Fadmin%2Fevals%2Fuser%2F"
