"""The admin of a lead shows the workspaces they lead only (issue #36); a superuser sees every workspace."""

from __future__ import annotations

import pytest
from django.urls import reverse

from evals.models import EvalSet, Rubric, User, Workspace
from evals.role_groups import LEAD_GROUP, sync_role_group
from judging.models import JudgeConfig
from labeling.models import LabelingQueue
from tests.factories import make_eval_set, make_output, make_rubric_version, make_workspace
from tests.judging_helpers import CONFIG_FORM
from tests.two_workspaces import EVAL_SET, MISSING, RUBRIC, signed_in

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


@pytest.mark.parametrize("model,name", [("evalset", EVAL_SET), ("rubric", RUBRIC)])
def test_a_superuser_adds_to_the_workspace_in_use_and_a_taken_name_is_refused_in_words(sides, model, name):
    a, b = sides
    root = User.objects.create_superuser("site-admin", password="pw-for-tests-1")
    rows = {"evalset": EvalSet, "rubric": Rubric}[model].objects
    add = reverse(f"admin:evals_{model}_add")
    in_beta = signed_in(root, b.workspace)
    page = in_beta.get(add)
    # The workspace is shown, not chosen: the add form has no workspace field, the page names the one in use.
    assert page.status_code == 200 and "workspace" not in page.context["adminform"].form.fields
    assert "Team beta" in page.content.decode() and "Team alpha" not in page.content.decode()
    assert in_beta.post(add, {"name": "fresh", "description": ""}).status_code == 302
    assert rows.get(name="fresh").workspace == b.workspace
    # beta has this name: the form again with the reason (before the fix: an integrity error, a 500).
    before = rows.count()
    taken = in_beta.post(add, {"name": name, "description": ""})
    assert taken.status_code == 200 and rows.count() == before
    assert "with this Workspace and Name already exists" in taken.content.decode()
    # The same name in a workspace that does not have it yet is fine (the negative control).
    make_workspace("gamma")
    assert signed_in(root, Workspace.objects.get(slug="gamma")).post(add, {"name": name}).status_code == 302
    assert rows.filter(name=name).count() == 3


def test_a_lead_renaming_an_eval_set_to_a_name_taken_in_their_workspace_is_told_so(sides, admin_lead):
    a, b = sides
    make_eval_set("taken-here", workspace=a.workspace)
    make_eval_set("taken-there", workspace=b.workspace)
    change = reverse("admin:evals_evalset_change", args=[a.eval_set.pk])
    refused = admin_lead.post(change, {"name": "taken-here", "description": ""})
    assert refused.status_code == 200 and "with this Workspace and Name already exists" in refused.content.decode()
    assert EvalSet.objects.get(pk=a.eval_set.pk).name == EVAL_SET
    # A name only another workspace has is free here; the workspace stays alpha's (read-only for a lead).
    assert (
        admin_lead.post(change, {"name": "taken-there", "description": "", "workspace": b.workspace.pk}).status_code
        == 302
    )
    renamed = EvalSet.objects.get(pk=a.eval_set.pk)
    assert (renamed.name, renamed.workspace) == ("taken-there", a.workspace)


def test_nobody_adds_a_row_of_a_workspace_without_one_in_use(db, client):
    client.force_login(User.objects.create_superuser("site-admin", password="pw-for-tests-1"))
    assert client.get(reverse("admin:evals_evalset_add")).status_code == 403  # no workspace exists yet
    make_workspace("first")
    assert client.get(reverse("admin:evals_evalset_add")).status_code == 200


def test_the_admin_refuses_a_row_whose_objects_belong_to_different_workspaces(client):
    """A queue of one team's eval set under another team's rubric version: the choices of someone who sees both
    (here the site's administrator) offer both, and the form refuses the mix in words; one team's pair saves."""
    alpha, beta = make_workspace("alpha"), make_workspace("beta")
    es_alpha, rv_beta = make_eval_set("rc-1", workspace=alpha), make_rubric_version("refund", workspace=beta)
    rv_alpha = make_rubric_version("refund", workspace=alpha)
    root = User.objects.create_superuser("root", password="pw-for-tests-1")
    client.force_login(root)
    add = reverse("admin:labeling_labelingqueue_add")
    form = {"eval_set": es_alpha.pk, "opened_by": root.pk, "is_current": "on", "opened_at_0": "2026-12-07",
            "opened_at_1": "01:00:00"}  # fmt: skip
    mixed = client.post(add, {**form, "rubric_version": rv_beta.pk})
    assert mixed.status_code == 200 and "belong to different workspaces" in mixed.content.decode()
    assert not LabelingQueue.objects.exists()
    same = client.post(add, {**form, "rubric_version": rv_alpha.pk})
    assert same.status_code == 302, same.content.decode()[:2000]
    assert LabelingQueue.objects.get().rubric_version == rv_alpha
