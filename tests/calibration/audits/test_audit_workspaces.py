"""Audit plans in two workspaces (issue 36): alpha's people never see, release, close or start on beta's plans,
marks and eval sets; each such request answers as one naming a missing object, and beta's plan is unchanged."""

from __future__ import annotations

import pytest
from django.urls import reverse

from calibration.models import AuditPlan
from evals.models import Role
from labeling.models import AuditOrder
from tests.factories import set_role
from tests.workspace_helpers import build, same_answer

pytestmark = pytest.mark.django_db

MISSING = 987654321


@pytest.fixture
def worlds():
    return build("alpha"), build("beta")


def test_beta_s_plan_answers_as_a_missing_one_and_stays_as_it_was(client, worlds):
    alpha, beta = worlds
    plan = AuditPlan.objects.get(pk=beta.ids["plan"])
    released = AuditOrder.objects.get(pk=plan.order_id).released
    asked = [
        ("get", "calibration:audit_plan", {}),
        ("get", "calibration:audit_plan_figures", {}),
        ("post", "calibration:audit_plan_release", {"k": 1}),
        ("post", "calibration:audit_plan_close", {}),
    ]
    for role in (Role.REVIEWER, Role.LEAD):
        client.force_login(alpha.people[role])
        for method, name, data in asked:
            for htmx in ({}, {"HTTP_HX_REQUEST": "true"}):
                call = getattr(client, method)
                foreign = call(reverse(name, args=[beta.ids["plan"]]), data, **htmx)
                missing = call(reverse(name, args=[MISSING]), data, **htmx)
                assert same_answer(foreign, missing), (role, name)
                assert foreign.status_code == (404 if role == Role.LEAD or method == "get" else 403), (role, name)
    plan.refresh_from_db()
    assert plan.closed_at is None
    assert AuditOrder.objects.get(pk=plan.order_id).released == released
    # Negative control: alpha's own plan opens.
    assert client.get(reverse("calibration:audit_plan", args=[alpha.ids["plan"]])).status_code == 200


def test_the_list_and_the_start_form_hold_only_the_workspace_s_plans_marks_and_sets(client, worlds):
    alpha, beta = worlds
    client.force_login(alpha.people[Role.LEAD])
    listed = client.get(reverse("calibration:audit_plans"))
    plans = [p for _, rows, _ in listed.context["sections"] for p, *_ in rows]
    assert [p.pk for p in plans] == [alpha.ids["plan"]]
    start = client.get(reverse("calibration:audit_plan_start"))
    form = start.context["form"]
    assert set(form.fields["gating"].queryset.values_list("pk", flat=True)) == {alpha.ids["mark"]}
    assert set(form.fields["eval_set"].queryset.values_list("workspace", flat=True)) == {alpha.workspace.pk}
    assert [m.pk for m in start.context["marks"]] == [alpha.ids["mark"]]
    assert beta.only_name not in start.content.decode()


def test_starting_a_plan_on_beta_s_mark_or_eval_set_is_refused_as_a_missing_one(client, worlds):
    alpha, beta = worlds
    client.force_login(alpha.people[Role.LEAD])
    before = AuditPlan.objects.count()
    base = {"gating": alpha.ids["mark"], "eval_set": alpha.ids["eval_set"], "seed": 3}
    for field, kind in (("gating", "mark"), ("eval_set", "eval_set")):
        foreign = client.post(reverse("calibration:audit_plan_start"), base | {field: beta.ids[kind]})
        missing = client.post(reverse("calibration:audit_plan_start"), base | {field: MISSING})
        assert foreign.status_code == 422 and same_answer(foreign, missing), field
        assert field in foreign.context["form"].errors
    assert AuditPlan.objects.count() == before


def test_a_lead_in_beta_who_annotates_in_alpha_cannot_read_or_close_alpha_s_plans(client, worlds):
    alpha, beta = worlds
    person = beta.people[Role.LEAD]
    set_role(person, Role.ANNOTATOR, alpha.workspace)
    client.force_login(person)
    assert client.get(reverse("calibration:audit_plans") + "?workspace=alpha").status_code == 403
    assert client.get(reverse("calibration:audit_plan", args=[alpha.ids["plan"]])).status_code == 403
    assert client.post(reverse("calibration:audit_plan_close", args=[alpha.ids["plan"]])).status_code == 403
    assert AuditPlan.objects.get(pk=alpha.ids["plan"]).closed_at is None
    assert client.get(reverse("calibration:audit_plans") + "?workspace=beta").status_code == 200
