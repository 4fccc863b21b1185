"""An audit of several criteria over the API (issue 37 item 3): a lead's token starts one on one sample and reads
its stored shared decision (the hand-worked one of tests/calibration/audits/test_audit_groups.py: FAIL at label
20 on next_step); bad input is refused in words with nothing started; another workspace's group is missing."""

from __future__ import annotations

import pytest

from calibration.audits.groups import release_group_next
from calibration.models import AuditPlan, AuditPlanGroup
from evals.models import Role
from tests import factories as make
from tests.api_helpers import call, create_token
from tests.audit_helpers import KEY, in_order
from tests.calibration.audits.test_audit_groups import OTHER, candidate, label

pytestmark = pytest.mark.django_db

ASK = {"eval_set": "rc-1", "rubric": "refund@1", "judge": "gpt-judge", "criteria": [KEY, OTHER], "seed": 7}


def test_a_lead_token_starts_a_group_and_reads_its_shared_decision(client):
    lead, rv, _judge, _eval_set = candidate()
    token = create_token(client, lead, ["audit"], rv)
    started = call(client, "POST", "/api/audit-plan-groups", token, ASK)
    assert started.status_code == 201, started.json()
    group = AuditPlanGroup.objects.get()
    body = started.json()
    assert (body["group"], body["k"], body["alpha_fail"]) == (group.pk, 2, pytest.approx(0.0125))
    assert set(body["plans"]) == {KEY, OTHER}
    release_group_next(group=group, by=lead, k=25)
    label(rv, in_order(group.plans.first())[:25], {KEY: "PASS", OTHER: "FAIL"})
    shown = call(client, "GET", f"/api/audit-plan-groups/{group.pk}", token).json()
    assert (shown["shared"]["decided"], shown["shared"]["decided_at"], shown["shared"]["deciding"]) == (
        "FAIL",
        20,
        [OTHER],
    )
    assert shown["release"].startswith("FAIL came from next_step at label 20")


def test_bad_input_is_refused_in_words_and_nothing_is_started(client):
    lead, rv, _judge, _eval_set = candidate()
    token = create_token(client, lead, ["audit"], rv)
    twice = call(client, "POST", "/api/audit-plan-groups", token, {**ASK, "criteria": [KEY, KEY]})
    assert twice.status_code == 409 and "chosen twice" in twice.json()["error"]
    unknown = call(client, "POST", "/api/audit-plan-groups", token, {**ASK, "criteria": [KEY, "nope"]})
    assert unknown.status_code == 404 and "no criterion 'nope'" in unknown.json()["error"]
    empty = call(client, "POST", "/api/audit-plan-groups", token, {**ASK, "criteria": []})
    assert empty.status_code == 400 and "criteria" in str(empty.json())  # the schema's own refusal
    assert not AuditPlanGroup.objects.exists() and not AuditPlan.objects.exists()


def test_another_workspace_s_group_answers_as_a_missing_one(client):
    lead, rv, _judge, _eval_set = candidate()
    token = create_token(client, lead, ["audit"], rv)
    call(client, "POST", "/api/audit-plan-groups", token, ASK)
    group = AuditPlanGroup.objects.get()
    beta = make.make_workspace("beta")
    other_lead = make.make_user("olga", Role.LEAD, workspace=beta)
    other_rv = make.make_rubric_version(name="refund", workspace=beta)
    other = create_token(client, other_lead, ["audit"], other_rv)
    foreign = call(client, "GET", f"/api/audit-plan-groups/{group.pk}", other)
    missing = call(client, "GET", "/api/audit-plan-groups/987654321", other)
    assert foreign.status_code == missing.status_code == 404 and foreign.json() == missing.json()
    assert call(client, "GET", f"/api/audit-plan-groups/{group.pk}", token).status_code == 200  # negative control
