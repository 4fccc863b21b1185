"""The audit plans list names each plan's design and predictor in a compact column (issue 38 item 1): the design,
the predictor in a few words, the full words (naming a jury's extra configs) in its title; its queries do not grow
with the plans or their signals."""

from __future__ import annotations

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.urls import reverse
from django.utils.html import escape

from calibration.audits.plans import close_plan
from calibration.models import AuditPlan, AuditPlanSignal
from tests.audit_helpers import KEY, candidate, plan_on
from tests.factories import add_verdict, make_judge, make_run

pytestmark = pytest.mark.django_db
PLANS = reverse("calibration:audit_plans")


def configs(c, *names: str):
    """Judge configs beside the plan's own, each with a verdict on every output of the candidate."""
    made = []
    for name in names:
        jc = make_judge(name)
        run = make_run(c.eval_set, c.rubric_version, jc, agent_version="default")
        for i, output in enumerate(c.outputs):
            add_verdict(run, output, KEY, "PASS" if i % 2 == 0 else "FAIL")
        made.append(jc)
    return made


def cell(listing: str, plan) -> str:
    start = listing.index(f'id="plan-method-{plan.pk}"')
    return listing[start : listing.index("</td>", start)]


def test_each_plan_s_design_and_predictor_in_its_column(client):
    c = candidate(n=12)
    instrument, second = configs(c, "instrument", "second")
    jury = plan_on(c, extra_judges=[instrument, second])
    close_plan(plan=jury, by=c.lead)
    stratified = plan_on(c, design="stratified")
    close_plan(plan=stratified, by=c.lead)
    alone = plan_on(c)  # the judge's vote share alone
    client.force_login(c.lead)
    listing = client.get(PLANS).content.decode()
    full = escape("uniform audit, predictor: the judge's vote share + 2 other configs (instrument, second)")
    assert cell(listing, jury) == (
        f'id="plan-method-{jury.pk}" title="{full}">uniform<br><span class="muted">vote share + 2 configs</span>'
    )
    assert 'stratified<br><span class="muted">verdict, two strata</span>' in cell(listing, stratified)
    assert '>uniform<br><span class="muted">vote share</span>' in cell(listing, alone)
    assert "configs" not in cell(listing, alone) and "vote share" not in cell(listing, stratified)  # negative controls


def test_a_plan_from_before_the_jury_reads_verdict_not_vote_share(client):
    c = candidate(n=12)
    plan = plan_on(c)
    AuditPlanSignal.objects.filter(plan=plan).delete()
    AuditPlan.objects.filter(pk=plan.pk).update(predictor="verdict")
    client.force_login(c.lead)
    got = cell(client.get(PLANS).content.decode(), plan)
    words = "uniform audit, predictor: the judge&#x27;s verdict"
    assert f'title="{words}">uniform<br><span class="muted">verdict</span>' in got


def test_the_list_s_queries_do_not_grow_with_jury_plans_or_their_configs(client):
    c = candidate(n=12)
    extra = configs(c, "a", "b", "c")
    client.force_login(c.lead)

    def count() -> int:
        client.get(PLANS)  # the session's first reads
        with CaptureQueriesContext(connection) as queries:
            assert client.get(PLANS).status_code == 200
        return len(queries)

    first = plan_on(c, extra_judges=extra[:1])
    one = count()
    close_plan(plan=first, by=c.lead)
    plan_on(c, extra_judges=extra)
    close_plan(plan=AuditPlan.objects.latest("pk"), by=c.lead)
    plan_on(c, design="stratified")
    assert count() == one  # three plans, four extra configs among them: as many queries as one plan with one
