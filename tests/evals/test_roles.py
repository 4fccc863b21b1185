"""Roles are enforced by the server, whatever the menus show."""

from __future__ import annotations

import os
import re

import pytest
from django.conf import settings
from django.core.management import CommandError, call_command
from django.urls import reverse

from evals.access import has_role
from evals.models import Role, User
from tests.factories import default_workspace, make_workspace
from tests.login_helpers import password_login


def test_anonymous_users_are_sent_to_log_in(client):
    response = client.get(reverse("home"))
    assert response.status_code == 302
    assert response["Location"].startswith(reverse("login"))


def test_every_role_sees_the_home_page(client, annotator, reviewer, lead):
    for user in (annotator, reviewer, lead):
        client.force_login(user)
        assert client.get(reverse("home")).status_code == 200


def test_an_inactive_account_cannot_log_in(client, outsider):
    assert not password_login(client, "outsider", "pw-for-tests-1")
    assert not has_role(outsider, default_workspace(), Role.ANNOTATOR)


@pytest.mark.django_db  # the page names the demo accounts that still have the public password (issue 41)
def test_login_form_uses_djangos_labels(client):
    page = client.get(reverse("login")).content.decode()
    assert 'for="id_username">Username<' in page
    assert 'for="id_password">Password<' in page
    assert ">Log in</button>" in page


def test_the_admin_is_for_staff_only(client, lead):
    client.force_login(lead)
    assert client.get("/admin/").status_code == 302


@pytest.mark.django_db
def test_add_user_creates_then_updates_an_account(monkeypatch):
    monkeypatch.setenv("ICEWATER_PASSWORD", "correct horse battery")
    workspace = default_workspace()  # the only one: --workspace may be left out
    call_command("add_user", "maria", "--role", "reviewer")
    user = User.objects.get(username="maria")
    assert user.role_in(workspace) == Role.REVIEWER and user.check_password("correct horse battery")
    call_command("add_user", "maria", "--role", "lead")
    user = User.objects.get(username="maria")
    assert user.role_in(workspace) == Role.LEAD
    assert User.objects.filter(username="maria").count() == 1


@pytest.mark.django_db
def test_add_user_gives_one_role_per_workspace(monkeypatch):
    monkeypatch.setenv("ICEWATER_PASSWORD", "correct horse battery")
    alpha, beta = make_workspace("alpha"), make_workspace("beta")
    call_command("add_user", "maria", "--role", "annotator", "--workspace", "alpha")
    call_command("add_user", "maria", "--role", "lead", "--workspace", "beta")
    maria = User.objects.get(username="maria")
    assert (maria.role_in(alpha), maria.role_in(beta)) == (Role.ANNOTATOR, Role.LEAD)
    with pytest.raises(CommandError, match=r"say which workspace with --workspace SLUG .*workspaces: alpha, beta"):
        call_command("add_user", "maria", "--role", "reviewer")  # two workspaces, none named
    with pytest.raises(CommandError, match=r"there is no workspace 'gamma' \(workspaces: alpha, beta\)"):
        call_command("add_user", "maria", "--role", "reviewer", "--workspace", "gamma")
    maria = User.objects.get(username="maria")
    assert (maria.role_in(alpha), maria.role_in(beta)) == (Role.ANNOTATOR, Role.LEAD)  # nothing changed


@pytest.mark.django_db
def test_add_user_reactivates_an_imported_account(monkeypatch, outsider):
    monkeypatch.setenv("ICEWATER_PASSWORD", "correct horse battery")
    call_command("add_user", "outsider", "--role", "annotator")
    outsider.refresh_from_db()
    assert outsider.is_active


@pytest.mark.django_db
@pytest.mark.parametrize(
    ("args", "password", "message"),
    [
        (["bob", "--role", "annotator"], "short", "password rejected"),
        (["bad name", "--role", "annotator"], "long enough pw", "without spaces"),
    ],
)
def test_add_user_rejects_bad_input_and_writes_nothing(monkeypatch, args, password, message):
    monkeypatch.setenv("ICEWATER_PASSWORD", password)
    default_workspace()
    with pytest.raises(CommandError, match=message):
        call_command("add_user", *args)
    assert not User.objects.exists()


@pytest.mark.django_db
def test_add_user_rejects_an_unknown_role():
    os.environ["ICEWATER_PASSWORD"] = "long enough pw"
    try:
        with pytest.raises(CommandError, match="invalid choice"):
            call_command("add_user", "bob", "--role", "boss")
    finally:
        del os.environ["ICEWATER_PASSWORD"]
    assert not User.objects.exists()


def test_a_role_is_asked_through_has_role_not_a_user_property(lead):
    # User.is_lead / is_reviewer once said "no" to a superuser, whom has_role counts as a lead.
    assert not hasattr(User, "is_lead") and not hasattr(User, "is_reviewer")
    workspace = default_workspace()
    superuser = User(username="root", is_superuser=True)
    assert has_role(superuser, workspace, Role.LEAD) and has_role(lead, workspace, Role.LEAD)
    assert not has_role(lead, make_workspace("elsewhere"), Role.LEAD)  # a lead of one workspace only


# A template reading a property the user does not have renders it empty, silently: so none reads one.
ROLE_OFF_THE_USER = re.compile(r"\buser\.(is_lead|is_reviewer|is_annotator)\b")


def test_no_template_reads_a_role_off_the_user():
    templates = sorted((settings.BASE_DIR / "templates").rglob("*.html"))
    assert len(templates) > 20
    found = [f"{t.name}: {m.group(0)}" for t in templates for m in ROLE_OFF_THE_USER.finditer(t.read_text())]
    assert found == []
    # The negative control: the pattern does see such a read.
    assert ROLE_OFF_THE_USER.search("{% if request.user.is_lead %}") is not None
    assert ROLE_OFF_THE_USER.search("{% if is_lead %}") is None
