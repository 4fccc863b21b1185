"""Changing one's own password (/accounts/password/): how a member replaces the first password a lead gave them."""

from __future__ import annotations

import pytest
from django.urls import reverse

from evals.models import User
from tests.login_helpers import password_login

pytestmark = pytest.mark.django_db


def test_a_member_changes_their_password_with_the_old_one(client, annotator):
    client.force_login(annotator)
    new = "a much longer password 2026"
    response = client.post(
        reverse("password_change"),
        {"old_password": "pw-for-tests-1", "new_password1": new, "new_password2": new},
        follow=True,
    )
    assert "Your password is changed" in response.content.decode()
    assert User.objects.get(pk=annotator.pk).check_password(new)
    client.logout()
    assert password_login(client, "ann", new) and not password_login(client, "ann", "pw-for-tests-1")


def test_a_wrong_old_password_changes_nothing(client, annotator):
    client.force_login(annotator)
    response = client.post(
        reverse("password_change"),
        {"old_password": "wrong", "new_password1": "another long one 2026", "new_password2": "another long one 2026"},
    )
    assert response.status_code == 200 and "incorrectly" in response.content.decode()
    assert User.objects.get(pk=annotator.pk).check_password("pw-for-tests-1")


def test_signed_out_it_asks_to_sign_in(client):
    response = client.get(reverse("password_change"))
    assert response.status_code == 302 and response["Location"].startswith(reverse("login"))
