"""The demo's two workspaces (issue 36 item 7): the refund team's and a small billing team's, whose rubric has
the same name; maria is an annotator in one and the lead of the other, so a newcomer sees the switch and the
separation (README, "The switch")."""

from __future__ import annotations

from io import StringIO

import pytest
from django.core.management import call_command

from evals.models import EvalSet, Membership, Output, Role, RubricVersion, User, Workspace
from evals.workspaces import in_workspace
from judging.models import JudgeConfig
from labeling.models import LabelingQueue
from overview.demo.billing import BILLING_EVAL_SET, BILLING_WORKSPACE
from overview.demo.logins import DEMO_WORKSPACE

pytestmark = [pytest.mark.slow, pytest.mark.django_db]  # slow: each test loads the whole demo


@pytest.fixture
def demo():
    call_command("load_demo", verbosity=0, stdout=StringIO())
    return Workspace.objects.get(slug=DEMO_WORKSPACE), Workspace.objects.get(slug=BILLING_WORKSPACE)


def test_two_workspaces_each_with_its_own_rubric_of_the_same_name(demo):
    refunds, billing = demo
    assert billing.name == "Billing team"
    theirs = RubricVersion.objects.by_ref("refund-support@1", refunds)
    ours = RubricVersion.objects.by_ref("refund-support@1", billing)
    assert theirs.pk != ours.pk
    assert list(ours.criteria.order_by("order").values_list("key", flat=True)) == ["prorated_amount", "cites_invoice"]
    assert "correct_amount" in theirs.criteria.values_list("key", flat=True)
    # The billing workspace holds its six outputs, its queue under its own rubric, and nothing of the refund team.
    assert list(in_workspace(EvalSet, billing).values_list("name", flat=True)) == [BILLING_EVAL_SET]
    assert in_workspace(Output, billing).count() == 6
    assert LabelingQueue.objects.get(eval_set__workspace=billing, is_current=True).rubric_version == ours
    assert not in_workspace(JudgeConfig, billing).exists()
    assert in_workspace(Output, refunds).count() == 360  # the refund team's as before


def test_maria_is_an_annotator_of_one_and_the_lead_of_the_other(demo):
    refunds, billing = demo
    people = {u.username: u for u in User.objects.filter(username__in=["maria", "deshawn", "lee", "ana"])}
    assert (people["maria"].role_in(refunds), people["maria"].role_in(billing)) == (Role.ANNOTATOR, Role.LEAD)
    assert (people["deshawn"].role_in(refunds), people["deshawn"].role_in(billing)) == (Role.ANNOTATOR,) * 2
    # Negative controls: the others belong to the refund team only.
    assert (people["lee"].role_in(refunds), people["lee"].role_in(billing)) == (Role.LEAD, None)
    assert people["ana"].role_in(billing) is None
    # The billing queue was opened by its lead.
    assert LabelingQueue.objects.get(eval_set__workspace=billing, is_current=True).opened_by == people["maria"]


def test_maria_switches_workspaces_and_someone_else_cannot_reach_the_billing_one(demo, client):
    refunds, billing = demo
    # The login page's notice of public demo accounts says she is a lead now (of the billing team).
    assert "<strong>maria</strong> (a lead" in client.get("/accounts/login/").content.decode()
    client.force_login(User.objects.get(username="maria"))
    page = client.get("/?workspace=billing")
    assert page.status_code == 200 and page.wsgi_request.workspace == billing
    assert "Billing team" in page.content.decode() and "Refund support" in page.content.decode()  # the switcher
    assert client.get("/?workspace=refund-support").wsgi_request.workspace == refunds
    client.force_login(User.objects.get(username="lee"))
    assert client.get("/?workspace=billing").status_code == 404


def test_loading_again_adds_nothing_and_keeps_a_removed_member_removed(demo):
    _, billing = demo
    Membership.objects.filter(workspace=billing, user__username="deshawn").delete()  # the lead removed him
    rows = (EvalSet.objects.count(), Output.objects.count(), RubricVersion.objects.count(), Membership.objects.count())
    out = StringIO()
    call_command("load_demo", stdout=out)
    assert "Demo already loaded, nothing added" in out.getvalue()
    assert "maria is also the lead of Billing team (billing)" in out.getvalue()
    after = (EvalSet.objects.count(), Output.objects.count(), RubricVersion.objects.count(), Membership.objects.count())
    assert after == rows
    assert not Membership.objects.filter(workspace=billing, user__username="deshawn").exists()
