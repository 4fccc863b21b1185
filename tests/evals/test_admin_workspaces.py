"""The admin of a lead shows the workspaces they lead only (issue #36); a superuser sees every workspace."""

from __future__ import annotations

import pytest
from django.urls import reverse

from evals.models import User
from evals.role_groups import LEAD_GROUP, sync_role_group
from judging.models import JudgeConfig
from labeling.models import LabelingQueue
from tests.factories import make_eval_set, make_output
from tests.judging_helpers import CONFIG_FORM
from tests.two_workspaces import MISSING

pytestmark = pytest.mark.django_db


@pytest.fixture
def admin_lead(sides, client):
    a, _ = sides
    a.lead.is_staff = True
    a.lead.save()
    sync_role_group(a.lead)
    assert a.lead.groups.filter(name=LEAD_GROUP).exists()
    client.force_login(a.lead)
    return client


MODELS = {
    "evals_evalset": lambda s: s.eval_set.pk,
    "evals_rubricversion": lambda s: s.rubric_version.pk,
    "evals_output": lambda s: s.outputs[0].pk,
    "labeling_annotation": lambda s: s.draft.pk,
    "labeling_labelingqueue": lambda s: s.queue.pk,
    "judging_judgeconfig": lambda s: s.judge.pk,
    "judging_judgerun": lambda s: s.run.pk,
    "judging_verdict": lambda s: s.verdict.pk,
}


def test_a_leads_admin_lists_and_opens_only_the_workspaces_they_lead(sides, admin_lead):
    a, b = sides
    for model, pk in MODELS.items():
        listing = admin_lead.get(reverse(f"admin:{model}_changelist"))
        assert listing.status_code == 200, model
        assert listing.context["cl"].result_count == listing.context["cl"].full_result_count
        shown = {row.pk for row in listing.context["cl"].result_list}
        assert pk(a) in shown and pk(b) not in shown, model
        other = admin_lead.get(reverse(f"admin:{model}_change", args=[pk(b)]))
        missing = admin_lead.get(reverse(f"admin:{model}_change", args=[MISSING]))
        assert (other.status_code, other.url) == (missing.status_code, missing.url) == (302, reverse("admin:index"))
        assert admin_lead.get(reverse(f"admin:{model}_change", args=[pk(a)])).status_code == 200, model


def test_list_filters_offer_only_the_leads_eval_sets(sides, admin_lead):
    a, b = sides
    # A second eval set with an output and a queue in each: a filter with a single choice is not shown at all.
    for side in (a, b):
        second = make_eval_set("second", workspace=side.workspace)
        make_output(second)
        LabelingQueue.objects.create(eval_set=second, rubric_version=side.rubric_version, opened_by=side.lead)
    for model in ("evals_case", "evals_output", "labeling_labelingqueue"):
        page = admin_lead.get(reverse(f"admin:{model}_changelist")).content.decode()
        assert f"eval_set__id__exact={a.eval_set.pk}" in page, model
        assert f"eval_set__id__exact={b.eval_set.pk}" not in page, model


def test_a_superuser_sees_every_workspace(sides, client):
    a, b = sides
    client.force_login(User.objects.create_superuser("site-admin", password="pw-for-tests-1"))
    listing = client.get(reverse("admin:evals_evalset_changelist"))
    assert {row.pk for row in listing.context["cl"].result_list} >= {a.eval_set.pk, b.eval_set.pk}


def test_a_lead_adds_a_judge_config_to_the_workspace_in_use(sides, admin_lead):
    a, _ = sides
    form = {**CONFIG_FORM, "name": "admin-made"}
    assert admin_lead.post(reverse("admin:judging_judgeconfig_add"), form).status_code == 302
    assert JudgeConfig.objects.get(name="admin-made").workspace == a.workspace
    # A name alpha already has is refused in words, not with an integrity error.
    taken = admin_lead.post(reverse("admin:judging_judgeconfig_add"), {**form, "name": a.judge.name})
    assert taken.status_code == 200 and "already has a judge config of this name" in taken.content.decode()
