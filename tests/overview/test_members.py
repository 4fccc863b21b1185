"""The members page: a workspace's leads see who can do what there, and add, create, change and remove members.

Two workspaces throughout: "default" (the lead's) and "team-b", where the same lead may hold another role.
"""

from __future__ import annotations

import re
import threading

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.urls import reverse

from evals.models import AuditAction, AuditEvent, Membership, MembershipSource, Role, User
from labeling.models import Label
from overview import members
from tests.factories import (
    all_answers,
    annotate_directly,
    default_workspace,
    make_eval_set,
    make_output,
    make_rubric_version,
    make_user,
    make_workspace,
    set_role,
)
from tests.login_helpers import password_login

pytestmark = pytest.mark.django_db


@pytest.fixture
def team_b():
    return make_workspace("team-b")


@pytest.fixture
def as_lead(client, lead):
    client.force_login(lead)
    return client


def membership(user, workspace=None) -> Membership:
    return Membership.objects.get(user=user, workspace=workspace or default_workspace())


def page_text(response) -> str:
    return response.content.decode()


def without_csrf(text: str) -> str:
    """A page with its CSRF tokens blanked: Django masks the token afresh in every response."""
    return re.sub(r'("X-CSRFToken": "|name="csrfmiddlewaretoken" value=")[^"]+', r"\1", text)


def test_the_page_lists_role_sign_in_last_sign_in_and_labels_given_here(as_lead, lead, annotator, team_b):
    es, rv = make_eval_set(), make_rubric_version(criteria=None)
    for i in range(3):  # 3 submitted annotations x 2 criteria = 6 labels here
        annotate_directly(make_output(es, case_id=f"c{i}"), rv, annotator, all_answers(rv))
    annotate_directly(make_output(es, case_id="draft"), rv, annotator, all_answers(rv), submit=False)  # a draft
    # Labels for team-b's outputs do not count here.
    set_role(annotator, Role.ANNOTATOR, team_b)
    es_b, rv_b = make_eval_set(workspace=team_b), make_rubric_version(workspace=team_b)
    annotate_directly(make_output(es_b, case_id="b"), rv_b, annotator, all_answers(rv_b))
    oidc = make_user("idp-person", Role.REVIEWER)
    oidc.set_unusable_password()
    oidc.save()
    Membership.objects.filter(user=oidc).update(source=MembershipSource.OIDC)

    response = as_lead.get(reverse("overview:members"))
    assert response.status_code == 200
    rows = {
        m.group(1): m.group(0)
        for m in re.finditer(r'<tr id="member-\d+">\s*<td>([\w-]+).*?</tr>', page_text(response), re.S)
    }
    assert set(rows) == {"lead", "ann", "idp-person"}
    never = r'<td><span class="muted">never</span></td>'
    assert re.search(rf'<td>Annotator</td>\s*<td>password</td>\s*{never}\s*<td class="num">6</td>', rows["ann"])
    assert "identity provider" in rows["idp-person"] and "Kept by the identity provider" in rows["idp-person"]
    assert "Change role" not in rows["idp-person"] and "Change role" in rows["ann"]
    assert '<td class="num">0</td>' in rows["lead"]


def test_last_sign_in_is_shown(client, lead):
    assert password_login(client, "lead")
    lead.refresh_from_db()
    response = client.get(reverse("overview:members"))
    assert f"{lead.last_login:%Y-%m-%d %H:%M}" in page_text(response)


def test_labels_given_are_counted_in_one_query_whatever_the_number_of_members(as_lead, lead):
    es, rv = make_eval_set(), make_rubric_version()

    def queries() -> int:
        with CaptureQueriesContext(connection) as captured:
            assert as_lead.get(reverse("overview:members")).status_code == 200
        return len(captured)

    people = [make_user(f"a{i}") for i in range(2)]
    for i, who in enumerate(people):
        annotate_directly(make_output(es, case_id=f"x{i}"), rv, who, all_answers(rv))
    queries()  # the first request of the session also saves the workspace in it
    few = queries()
    assert few == 4  # the user, their memberships (middleware; the session is in Redis); the members, their labels
    for i in range(2, 12):
        who = make_user(f"a{i}")
        annotate_directly(make_output(es, case_id=f"x{i}"), rv, who, all_answers(rv))
    assert queries() == few


@pytest.mark.parametrize("role", [Role.ANNOTATOR, Role.REVIEWER])
def test_only_leads_of_the_workspace_in_use_open_it(client, role, team_b):
    person = make_user("pat", role)
    set_role(person, Role.LEAD, team_b)  # a lead elsewhere
    client.force_login(person)
    assert client.get(reverse("overview:members")).status_code == 403
    assert client.get(reverse("overview:audit_log")).status_code == 403
    # The same person, working in team-b, is its lead: the page lists team-b's members only.
    response = client.get(reverse("overview:members"), {"workspace": "team-b"})
    assert response.status_code == 200 and f"member-{membership(person, team_b).pk}" in page_text(response)
    assert f"member-{membership(person).pk}" not in page_text(response)


def test_the_nav_offers_members_to_leads_only(client, lead, annotator):
    client.force_login(lead)
    assert 'href="/members/">Members</a>' in page_text(client.get("/"))
    client.force_login(annotator)
    assert "/members/" not in page_text(client.get("/"))


def test_a_lead_adds_an_existing_account_and_the_log_says_so(as_lead, lead, team_b):
    someone = make_user("sam", Role.LEAD, workspace=team_b)
    response = as_lead.post(reverse("overview:add_member"), {"username": "sam", "role": "reviewer"}, follow=True)
    assert "sam is now a member (reviewer)." in page_text(response)
    assert membership(someone).role == Role.REVIEWER and membership(someone, team_b).role == Role.LEAD
    event = AuditEvent.objects.get(workspace=default_workspace())
    assert (event.action, event.actor, event.summary) == (AuditAction.MEMBER_ADDED, lead, "added sam as reviewer")


@pytest.mark.parametrize(
    "username,message",
    [("nobody", "No account is named &#x27;nobody&#x27;"), ("ann", "ann is already a member (annotator)")],
)
def test_adding_an_unknown_account_or_a_member_is_refused(as_lead, annotator, username, message):
    response = as_lead.post(reverse("overview:add_member"), {"username": username, "role": "lead"})
    assert response.status_code == 409 and message in page_text(response)
    assert membership(annotator).role == Role.ANNOTATOR and not AuditEvent.objects.exists()


def test_a_bad_role_is_a_form_error(as_lead):
    make_user("sam", workspace=make_workspace("elsewhere"))
    response = as_lead.post(reverse("overview:add_member"), {"username": "sam", "role": "admin"})
    assert response.status_code == 422 and "Select a valid choice" in page_text(response)
    assert not Membership.objects.filter(user__username="sam", workspace=default_workspace()).exists()


def test_a_lead_creates_an_account_whose_first_password_is_shown_once(client, as_lead):
    response = as_lead.post(reverse("overview:create_member"), {"new-username": "newbie", "new-role": "annotator"})
    assert response.status_code == 200 and "no-store" in response["Cache-Control"]
    password = re.search(r'id="first-password">([^<]+)<', page_text(response)).group(1)
    newbie = User.objects.get(username="newbie")
    assert newbie.is_active and newbie.check_password(password) and len(password) == 16
    assert membership(newbie).role == Role.ANNOTATOR
    assert password not in page_text(as_lead.get(reverse("overview:members")))  # shown once
    assert password not in str(list(AuditEvent.objects.values_list("summary", "detail")))
    client.logout()
    assert password_login(client, "newbie", password)  # signs in with it


@pytest.mark.parametrize("username", ["ann", "has space", ""])
def test_creating_an_existing_or_malformed_account_is_refused(as_lead, annotator, username):
    response = as_lead.post(reverse("overview:create_member"), {"new-username": username, "new-role": "lead"})
    assert response.status_code in (409, 422) and User.objects.count() == 2
    assert not AuditEvent.objects.exists()


def test_a_lead_changes_a_role_and_the_new_role_counts_at_the_next_request(client, lead, annotator):
    client.force_login(annotator)
    assert client.get(reverse("labeling:my_work")).status_code == 200
    lead_client = client.__class__()
    lead_client.force_login(lead)
    lead_client.post(reverse("overview:change_member_role", args=[membership(annotator).pk]), {"role": "reviewer"})
    assert membership(annotator).role == Role.REVIEWER
    assert client.get(reverse("labeling:my_work")).status_code == 403  # no longer labels (the blind rule)
    event = AuditEvent.objects.get()
    assert (event.action, event.summary) == (AuditAction.MEMBER_ROLE_CHANGED, "ann: annotator → reviewer")
    assert not annotator.groups.filter(name="lead").exists()
    lead_client.post(reverse("overview:change_member_role", args=[membership(annotator).pk]), {"role": "lead"})
    assert annotator.groups.filter(name="lead").exists()  # a lead gets the lead group's admin permissions


def test_removal_ends_access_at_the_next_request_and_keeps_the_labels(client, lead, annotator):
    es, rv = make_eval_set(), make_rubric_version()
    annotate_directly(make_output(es), rv, annotator, all_answers(rv))
    client.force_login(annotator)
    assert client.get(reverse("labeling:my_work")).status_code == 200
    lead_client = client.__class__()
    lead_client.force_login(lead)
    response = lead_client.post(reverse("overview:remove_member", args=[membership(annotator).pk]), follow=True)
    assert "ann is no longer a member" in page_text(response)
    assert client.get(reverse("labeling:my_work")).status_code == 403  # the same signed-in session, refused
    assert client.get("/", {"workspace": "default"}).status_code == 404  # the workspace is no longer theirs
    assert Label.objects.filter(annotation__annotator=annotator).count() == 2 and User.objects.filter(pk=annotator.pk)
    event = AuditEvent.objects.get()
    assert (event.action, event.summary) == (AuditAction.MEMBER_REMOVED, "removed ann (was annotator)")


@pytest.mark.parametrize("action", ["demote", "remove"])
def test_the_last_lead_can_neither_leave_nor_be_demoted(as_lead, lead, action):
    mine = membership(lead)
    if action == "demote":
        response = as_lead.post(reverse("overview:change_member_role", args=[mine.pk]), {"role": "annotator"})
    else:
        response = as_lead.post(reverse("overview:remove_member", args=[mine.pk]))
    assert response.status_code == 409
    assert "lead is the last lead of this workspace" in page_text(response)
    assert membership(lead).role == Role.LEAD and not AuditEvent.objects.exists()


def test_with_a_second_lead_a_lead_may_step_down(as_lead, lead):
    make_user("lead2", Role.LEAD)
    as_lead.post(reverse("overview:change_member_role", args=[membership(lead).pk]), {"role": "reviewer"})
    assert membership(lead).role == Role.REVIEWER
    assert as_lead.get(reverse("overview:members")).status_code == 403  # no longer a lead here


def test_memberships_of_the_identity_provider_are_not_changed_here(as_lead):
    person = make_user("idp")
    Membership.objects.filter(user=person).update(source=MembershipSource.OIDC)
    kept = membership(person).pk
    for response in (
        as_lead.post(reverse("overview:change_member_role", args=[kept]), {"role": "lead"}),
        as_lead.post(reverse("overview:remove_member", args=[kept])),
    ):
        assert response.status_code == 409 and "comes from the identity provider" in page_text(response)
    assert membership(person).role == Role.ANNOTATOR and not AuditEvent.objects.exists()


def test_a_membership_of_another_workspace_answers_as_a_missing_one(as_lead, team_b):
    other = membership(make_user("bea", Role.ANNOTATOR, workspace=team_b), team_b).pk
    missing = other + 1000
    for pk in (other, missing):
        change = as_lead.post(reverse("overview:change_member_role", args=[pk]), {"role": "lead"})
        remove = as_lead.post(reverse("overview:remove_member", args=[pk]))
        assert (change.status_code, remove.status_code) == (404, 404)
    answers = {
        without_csrf(page_text(as_lead.post(reverse("overview:remove_member", args=[pk])))) for pk in (other, missing)
    }
    assert len(answers) == 1  # the same page, word for word
    assert Membership.objects.get(pk=other).role == Role.ANNOTATOR and not AuditEvent.objects.exists()


def test_a_lead_of_another_workspace_cannot_post_here(client, team_b, annotator):
    outsider_lead = make_user("lead-b", Role.LEAD, workspace=team_b)
    client.force_login(outsider_lead)
    response = client.post(reverse("overview:remove_member", args=[membership(annotator).pk]))
    assert response.status_code == 404  # their workspace is team-b: default's membership is missing there
    assert membership(annotator)


def test_posts_need_the_csrf_token(lead, annotator):
    from django.test import Client

    strict = Client(enforce_csrf_checks=True)
    strict.force_login(lead)
    response = strict.post(reverse("overview:remove_member", args=[membership(annotator).pk]))
    assert response.status_code == 403 and membership(annotator)


@pytest.mark.django_db(transaction=True)
def test_two_leads_demoting_each_other_at_once_leave_one_lead(monkeypatch):
    """The first change holds the lead rows' lock until it commits; the second waits, then sees one lead left."""
    lead1, lead2 = make_user("l1", Role.LEAD), make_user("l2", Role.LEAD)
    first_inside, first_may_commit = threading.Event(), threading.Event()
    real = members.record_membership

    def paused(*args, **kwargs):
        if threading.current_thread().name == "first":
            first_inside.set()  # its update is made, not yet committed
            first_may_commit.wait(10)
        return real(*args, **kwargs)

    monkeypatch.setattr(members, "record_membership", paused)
    results: dict[str, str] = {}

    def demote(target, by) -> None:
        try:
            members.change_role(membership=membership(target), by=by, role=Role.ANNOTATOR)
            results[threading.current_thread().name] = "changed"
        except members.MemberRefused as exc:
            results[threading.current_thread().name] = str(exc)
        finally:
            connection.close()

    first = threading.Thread(target=demote, args=(lead2, lead1), name="first")
    first.start()
    assert first_inside.wait(10)
    second = threading.Thread(target=demote, args=(lead1, lead2), name="second")
    second.start()
    second.join(1)
    assert second.is_alive()  # waiting for the first's lock
    first_may_commit.set()
    first.join(10)
    second.join(10)
    assert results["first"] == "changed" and "l1 is the last lead of this workspace" in results["second"]
    assert list(Membership.objects.filter(role=Role.LEAD).values_list("user__username", flat=True)) == ["l1"]
