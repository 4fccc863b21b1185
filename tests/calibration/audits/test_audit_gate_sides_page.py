"""The plan page says how the gate reads the plan when its criterion is one of k > 1 gating criteria decided by
audits: its FAIL side at alpha / k (calibration/stats/audit_shared.py); a plan of the only such criterion says
nothing more than its own alpha per side."""

from __future__ import annotations

import pytest
from django.urls import reverse

from calibration.audits.plans import start_plan
from evals.models import Role
from tests import factories as make
from tests.audit_helpers import KEY

pytestmark = pytest.mark.django_db

OTHER = "next_step"


def page(client, gating: list[str]) -> str:
    lead = make.make_user("lee", Role.LEAD)
    rv = make.make_rubric_version(name="refund")
    judge = make.make_judge("gpt-judge")
    make.mark_as_gating(rv, judge, gating, make.make_eval_set("cal"), by=lead, min_pass_rate=0.5, decide_on="audit")
    eval_set = make.make_eval_set("rc-1")
    make.bulk_verdicts(eval_set, rv, judge, {KEY: {"PASS": 40}, OTHER: {"PASS": 40}})
    make.open_queue(eval_set, rv, lead)
    plan = start_plan(criterion=rv.criteria.get(key=KEY), eval_set=eval_set, judge_config=judge, by=lead, seed=7)
    client.force_login(lead)
    return client.get(reverse("calibration:audit_plan", args=[plan.pk])).content.decode()


def test_one_of_two_audited_criteria_says_the_gate_reads_its_fail_side_at_alpha_over_2(client):
    body = page(client, [KEY, OTHER])
    assert 'id="audit-gate-sides"' in body
    assert "the gate reads this plan&#x27;s PASS at 0.025 and its FAIL at 0.0125 (alpha / 2)" in body


def test_the_only_audited_criterion_says_nothing_more(client):
    assert 'id="audit-gate-sides"' not in page(client, [KEY])
