"""The workspace a request works in (evals/current_workspace.py) and the roles that hold in it (issue 36)."""

from __future__ import annotations

import pytest
from django.urls import reverse

from evals.access import NO_WORKSPACE
from evals.models import Membership, Role
from tests.factories import make_user, make_workspace, set_role
from tests.workspace_helpers import same_answer

pytestmark = pytest.mark.django_db

HOME = reverse("home")
SWITCH = reverse("overview:switch_workspace")
QUEUES = reverse("labeling:queues")  # a lead's page


@pytest.fixture
def two():
    """kim: an annotator in `alpha`, the lead of `beta`."""
    alpha, beta = make_workspace("alpha", "Alpha team"), make_workspace("beta", "Beta team")
    kim = make_user("kim", Role.ANNOTATOR, workspace=alpha)
    set_role(kim, Role.LEAD, beta)
    return alpha, beta, kim


def test_one_membership_is_the_workspace_and_its_role_holds(client):
    alpha = make_workspace("alpha", "Alpha team")
    ann = make_user("ann", Role.ANNOTATOR, workspace=alpha)
    client.force_login(ann)
    page = client.get(HOME).content.decode()
    assert "Alpha team" in page and 'class="role-badge role-annotator"' in page
    assert client.get(QUEUES).status_code == 403  # an annotator here


def test_the_role_is_the_one_of_the_workspace_in_use(client, two):
    alpha, beta, kim = two
    client.force_login(kim)
    client.get(HOME)
    first = client.session["icewater_workspace"]
    assert first == "alpha"  # the first by name
    assert client.get(QUEUES).status_code == 403  # an annotator in alpha
    assert client.post(SWITCH, {"workspace": "beta"}).status_code == 302
    assert client.get(QUEUES).status_code == 200  # the lead of beta
    page = client.get(HOME).content.decode()
    assert 'class="role-badge role-lead"' in page and 'value="beta" selected' in page


def test_an_address_naming_the_workspace_switches_a_member_and_is_missing_for_anyone_else(client, two):
    alpha, beta, kim = two
    outsider = make_workspace("gamma")
    client.force_login(kim)
    assert client.get(QUEUES + "?workspace=beta").status_code == 200
    assert client.session["icewater_workspace"] == "beta"
    missing = client.get(QUEUES + "?workspace=no-such-workspace")
    foreign = client.get(QUEUES + f"?workspace={outsider.slug}")
    assert missing.status_code == foreign.status_code == 404
    assert same_answer(missing, foreign)  # a slug tells an outsider nothing
    assert client.session["icewater_workspace"] == "beta"  # and changes nothing


def test_the_switcher_refuses_a_workspace_that_is_not_theirs(client, two):
    alpha, beta, kim = two
    make_workspace("gamma")
    client.force_login(kim)
    assert client.post(SWITCH, {"workspace": "gamma"}).status_code == 404
    assert client.get(SWITCH).status_code == 405  # a POST only: a cross-site link cannot switch it


def test_removing_a_member_ends_their_access_at_the_next_request(client, two):
    alpha, beta, kim = two
    client.force_login(kim)
    client.post(SWITCH, {"workspace": "beta"})
    assert client.get(QUEUES).status_code == 200
    Membership.objects.filter(user=kim, workspace=beta).delete()
    assert client.get(QUEUES).status_code == 403  # back in alpha, an annotator there
    assert client.session["icewater_workspace"] == "alpha"
    Membership.objects.filter(user=kim).delete()
    refused = client.get(HOME)
    assert refused.status_code == 403 and NO_WORKSPACE.split(":")[0] in refused.content.decode()


def test_a_superuser_administers_every_workspace_as_a_lead(client, two):
    from evals.models import User

    root = User.objects.create_superuser("root", password="pw-for-tests-1")
    client.force_login(root)
    page = client.get(HOME).content.decode()
    assert 'value="alpha"' in page and 'value="beta"' in page
    assert client.get(QUEUES + "?workspace=alpha").status_code == 200


def test_one_workspace_shows_its_name_without_a_switcher(client):
    alpha = make_workspace("alpha", "Alpha team")
    client.force_login(make_user("lee", Role.LEAD, workspace=alpha))
    page = client.get(HOME).content.decode()
    assert 'class="workspace-name"' in page and "workspace-switch" not in page
