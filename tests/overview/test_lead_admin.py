"""Leads in the Django admin: what the README and pages promise (judge configs, accounts, the records), through
the lead group's permissions, and nothing that would let a lead make anyone a superuser."""

from __future__ import annotations

import pytest
from django.contrib.auth.models import Group
from django.core.management import call_command
from django.urls import reverse

from evals.models import Role, User
from evals.role_groups import LEAD_GROUP
from judging.models import JudgeConfig
from overview.lead_permissions import LEAD_PERMISSIONS, sync_lead_group
from tests.factories import make_judge, make_user

pytestmark = pytest.mark.django_db


@pytest.fixture
def lee(monkeypatch):
    monkeypatch.setenv("ICEWATER_PASSWORD", "correct horse battery")
    call_command("add_user", "lee", "--role", "lead", "--staff")
    return User.objects.get(username="lee")


def test_migrate_leaves_the_lead_group_with_exactly_its_listed_permissions():
    group = Group.objects.get(name=LEAD_GROUP)
    have = {f"{p.content_type.app_label}.{p.codename}" for p in group.permissions.select_related("content_type")}
    want = {
        f"{app}.{action}_{model}"
        for app, models in LEAD_PERMISSIONS.items()
        for model, actions in models.items()
        for action in actions
    }
    assert have == want and "judging.change_judgeconfig" in have and "labeling.change_label" not in have
    group.permissions.clear()
    assert sync_lead_group().permissions.count() == len(want)  # idempotent: brought back, not doubled


def test_add_user_puts_a_lead_in_the_group_and_takes_them_out_when_the_role_changes(lee, monkeypatch):
    assert lee.groups.filter(name=LEAD_GROUP).exists() and lee.is_staff
    call_command("add_user", "lee", "--role", "reviewer")
    assert not lee.groups.filter(name=LEAD_GROUP).exists()


def test_a_staff_lead_can_open_what_the_pages_promise(client, lee):
    client.force_login(lee)
    index = client.get(reverse("admin:index")).content.decode()
    for name in ("judgeconfig", "verdict", "user", "goldlabel", "gatingmark", "gatingreview", "accessattempt"):
        assert f"/{name}/" in index, name
    assert client.get(reverse("admin:judging_judgeconfig_add")).status_code == 200
    assert client.get(reverse("admin:labeling_label_changelist")).status_code == 200


def test_an_unused_judge_config_can_be_edited_but_evidence_is_read_only(client, lee):
    judge = make_judge("draft-judge", backend=JudgeConfig.Backend.INSTRUMENT)
    client.force_login(lee)
    assert client.get(reverse("admin:judging_judgeconfig_change", args=[judge.pk])).status_code == 200
    assert client.get(reverse("admin:labeling_label_add")).status_code == 403
    gold = client.get(reverse("admin:labeling_goldlabel_changelist"))
    assert gold.status_code == 200 and "delete_selected" not in gold.content.decode()


def test_a_lead_manages_annotators_but_not_privileges_leads_or_superusers(client, lee):
    ann = make_user("ann", Role.ANNOTATOR)
    boss = User.objects.create_superuser("boss", password="pw-for-tests-1")
    other_lead = make_user("leigh", Role.LEAD)
    client.force_login(lee)
    url = reverse("admin:evals_user_change", args=[ann.pk])
    page = client.get(url).content.decode()
    assert 'name="is_superuser"' not in page and 'name="groups"' not in page and 'name="is_staff"' not in page
    form = {"username": "ann", "role": "reviewer", "is_active": "on", "is_superuser": "on", "is_staff": "on"}
    form |= {"date_joined_0": "2026-01-01", "date_joined_1": "00:00:00"}
    assert client.post(url, form).status_code == 302
    ann.refresh_from_db()
    assert ann.role == Role.REVIEWER and not ann.is_superuser and not ann.is_staff  # the flags were ignored
    promote = client.post(url, {**form, "role": "lead"})
    assert promote.status_code == 200 and "Select a valid choice" in promote.content.decode()
    ann.refresh_from_db()
    assert ann.role == Role.REVIEWER
    for user in (boss, other_lead):
        change = client.get(reverse("admin:evals_user_change", args=[user.pk])).content.decode()
        assert 'name="username"' not in change  # shown read-only at most: no field to post
        password_url = reverse("admin:auth_user_password_change", args=[user.pk])
        password = client.post(password_url, {"password1": "taken over now!", "password2": "taken over now!"})
        assert password.status_code == 403
        user.refresh_from_db()
        assert not user.check_password("taken over now!")


def test_annotators_and_reviewers_stay_out_of_the_admin(client, reviewer, annotator):
    for user in (reviewer, annotator):
        client.force_login(user)
        assert client.get(reverse("admin:index")).status_code == 302


def test_a_lead_adds_an_annotator_account_but_cannot_add_a_lead(client, lee):
    client.force_login(lee)
    url = reverse("admin:evals_user_add")
    form = {"username": "newbie", "password1": "a long enough pw 1", "password2": "a long enough pw 1"}
    refused = client.post(url, {**form, "role": "lead"})
    assert refused.status_code == 200 and "Select a valid choice" in refused.content.decode()
    assert not User.objects.filter(username="newbie").exists()
    assert client.post(url, {**form, "role": "annotator"}).status_code == 302
    newbie = User.objects.get(username="newbie")
    assert newbie.role == Role.ANNOTATOR and not newbie.is_staff and not newbie.groups.exists()
