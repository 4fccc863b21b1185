"""The lead's decision pages in two workspaces (issue 36): alpha's lead cannot approve, mark gating, review,
revoke or run the gate on beta's objects. Each such request answers exactly as one naming a missing object,
and beta's objects stay as they were."""

from __future__ import annotations

import pytest
from django.urls import reverse

from calibration.models import GateResult, GatingMark, GatingReview
from evals.models import Role, RubricVersion
from tests.factories import set_role
from tests.workspace_helpers import KEY, build, same_answer

pytestmark = pytest.mark.django_db

MISSING = 987654321


@pytest.fixture
def worlds():
    return build("alpha"), build("beta")


def _gate_form(ids: dict, **changed) -> dict:
    return {
        "eval_set": ids["eval_set"],
        "rubric_version": ids["rubric_version"],
        "judge_config": ids["judge"],
    } | changed


def test_the_gate_page_refuses_beta_s_objects_as_missing_ones_and_stores_nothing(client, worlds):
    alpha, beta = worlds
    client.force_login(alpha.people[Role.LEAD])
    stored = GateResult.objects.count()
    for field, kind in (("eval_set", "eval_set"), ("rubric_version", "rubric_version"), ("judge_config", "judge")):
        foreign = client.post(reverse("calibration:gate_run"), _gate_form(alpha.ids, **{field: beta.ids[kind]}))
        missing = client.post(reverse("calibration:gate_run"), _gate_form(alpha.ids, **{field: MISSING}))
        assert foreign.status_code == 422 and same_answer(foreign, missing), field
        assert field in foreign.context["form"].errors
    assert GateResult.objects.count() == stored
    # Negative control: alpha's own objects are gated, recorded in alpha, and the command names alpha.
    done = client.post(reverse("calibration:gate_run"), _gate_form(alpha.ids))
    assert done.status_code == 302
    record = GateResult.objects.latest("pk")
    assert record.workspace == alpha.workspace and record.asked_by == alpha.people[Role.LEAD]
    page = client.get(done["Location"]).content.decode()
    assert "python manage.py gate --workspace alpha --eval-set rc-1 --rubric refund@1 --judge gpt-judge" in page


def test_the_gate_page_offers_only_the_workspace_s_choices(client, worlds):
    alpha, beta = worlds
    client.force_login(alpha.people[Role.LEAD])
    page = client.get(reverse("calibration:gate_run"))
    form = page.context["form"]
    assert set(form.fields["eval_set"].queryset.values_list("workspace", flat=True)) == {alpha.workspace.pk}
    assert set(form.fields["judge_config"].queryset.values_list("pk", flat=True)) == {alpha.ids["judge"]}
    assert set(form.fields["rubric_version"].queryset.values_list("pk", flat=True)) == {alpha.ids["rubric_version"]}
    # The defaults are alpha's newest gating instrument, never beta's (built after it).
    assert form.initial["rubric_version"] == alpha.ids["rubric_version"]
    assert form.initial["judge_config"] == alpha.ids["judge"]
    assert beta.only_name not in page.content.decode()


def test_a_gate_result_of_beta_answers_as_a_missing_one(client, worlds):
    alpha, beta = worlds
    for role in (Role.REVIEWER, Role.LEAD):
        client.force_login(alpha.people[role])
        foreign = client.get(reverse("calibration:gate_result", args=[beta.ids["result"]]))
        missing = client.get(reverse("calibration:gate_result", args=[MISSING]))
        assert foreign.status_code == 404 and same_answer(foreign, missing)
        assert client.get(reverse("calibration:gate_result", args=[alpha.ids["result"]])).status_code == 200


def test_alpha_s_lead_cannot_approve_mark_review_or_revoke_in_beta(client, worlds):
    alpha, beta = worlds
    client.force_login(alpha.people[Role.LEAD])
    reason = {"reason": "fit to use", "review-reason": "stays as it is"}
    gating = reason | {"criterion": KEY, "policy": "observed"}

    def instrument(ids):
        return [ids["eval_set"], ids["rubric_version"], ids["judge"]]

    asked = [
        ("calibration:approve_rubric", [beta.ids["rubric_version"]], [MISSING], reason),
        ("calibration:revoke_gating", [beta.ids["mark"]], [MISSING], reason),
        ("calibration:mark_gating", instrument(beta.ids), [MISSING] * 3, gating),
        ("calibration:review_gating", instrument(beta.ids), [MISSING] * 3, reason),
    ]
    for part in ("eval_set", "rubric_version", "judge"):  # one of beta's ids among alpha's own
        mixed, gone = instrument(alpha.ids | {part: beta.ids[part]}), instrument(alpha.ids | {part: MISSING})
        asked += [("calibration:mark_gating", mixed, gone, gating), ("calibration:review_gating", mixed, gone, reason)]
    beta_rv = RubricVersion.objects.get(pk=beta.ids["rubric_version"])
    approval = (beta_rv.status, beta_rv.approved_by_id, beta_rv.approved_at, beta_rv.approval_reason)
    for name, foreign_args, missing_args, data in asked:
        for htmx in ({}, {"HTTP_HX_REQUEST": "true"}):
            foreign = client.post(reverse(name, args=foreign_args), data, **htmx)
            missing = client.post(reverse(name, args=missing_args), data, **htmx)
            assert foreign.status_code == 404 and same_answer(foreign, missing), (name, foreign_args)
    beta_rv.refresh_from_db()
    assert (beta_rv.status, beta_rv.approved_by_id, beta_rv.approved_at, beta_rv.approval_reason) == approval
    assert GatingMark.objects.get(pk=beta.ids["mark"]).revoked_at is None
    assert GatingMark.objects.filter(rubric_version=beta_rv).count() == 1
    assert not GatingReview.objects.exists()


def test_a_lead_in_beta_who_annotates_in_alpha_decides_nothing_in_alpha(client, worlds):
    alpha, beta = worlds
    person = beta.people[Role.LEAD]
    set_role(person, Role.ANNOTATOR, alpha.workspace)
    client.force_login(person)
    client.get(reverse("calibration:gates") + "?workspace=alpha")  # work in alpha
    alpha_rv = RubricVersion.objects.get(pk=alpha.ids["rubric_version"])
    refused = [
        client.post(reverse("calibration:approve_rubric", args=[alpha.ids["rubric_version"]]), {"reason": "fit"}),
        client.post(reverse("calibration:revoke_gating", args=[alpha.ids["mark"]]), {"reason": "no"}),
        client.post(reverse("calibration:gate_run"), _gate_form(alpha.ids)),
        client.get(reverse("calibration:gate_result", args=[alpha.ids["result"]])),
    ]
    assert [r.status_code for r in refused] == [403] * 4
    assert RubricVersion.objects.get(pk=alpha.ids["rubric_version"]).approval_reason == alpha_rv.approval_reason
    assert GatingMark.objects.get(pk=alpha.ids["mark"]).revoked_at is None
    # In beta, where they lead, the same person revokes beta's mark (the role is the workspace's).
    client.get(reverse("calibration:gates") + "?workspace=beta")
    client.post(reverse("calibration:revoke_gating", args=[beta.ids["mark"]]), {"reason": "judge drifted"})
    assert GatingMark.objects.get(pk=beta.ids["mark"]).revoked_by == person
