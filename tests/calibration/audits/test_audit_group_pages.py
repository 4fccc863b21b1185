"""The pages of an audit of several criteria on one sample (issue 37 item 3): the start form (the candidate's gating
criteria ticked, a refusal that keeps what was chosen), the group's page read from the stored shared decision in a
bounded number of queries, and who may do what: leads start, release and close, reviewers read, annotators get
403, another workspace's group answers as a missing one. The decision is test_audit_groups.py's, worked by hand:
the release FAILs at label 20 on next_step, correct_amount having passed at label 20 by the exact rule."""

from __future__ import annotations

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.urls import reverse

from calibration.audits.plans import start_plan
from calibration.models import AuditPlan, AuditPlanGroup, GatingMark
from evals.models import Role
from labeling.models import AuditOrder
from tests import factories as make
from tests.audit_helpers import KEY
from tests.calibration.audits.test_audit_groups import OTHER, candidate, fail_on_next_step, group_of
from tests.workspace_helpers import same_answer

pytestmark = pytest.mark.django_db

MISSING = 987654321
# The user and their membership (the session is read from Redis: cached_db), the group, its plans, their stored
# figures: whatever the labels.
GROUP_PAGE_QUERIES = 5


def url(name: str, group: AuditPlanGroup | int | None = None) -> str:
    pk = group if isinstance(group, int) else (group.pk if group else None)
    return reverse(f"calibration:{name}", args=[pk] if pk is not None else [])


def test_the_start_form_ticks_the_gating_criteria_and_starts_one_audit_of_them(client):
    lead, _rv, _judge, eval_set = candidate()
    client.force_login(lead)
    page = client.get(url("audit_group_start"))
    marks = list(GatingMark.objects.active().order_by("criterion__order"))
    assert page.context["form"].initial["marks"] == [m.pk for m in marks]
    assert page.content.decode().count('type="checkbox"') == 2 and page.content.decode().count("checked") == 2
    answer = client.post(url("audit_group_start"), {"marks": [m.pk for m in marks], "eval_set": eval_set.pk, "seed": 7})
    group = AuditPlanGroup.objects.get()
    assert answer.status_code == 302 and answer["Location"] == url("audit_group", group)
    assert (group.k, sorted(group.plans.values_list("criterion__key", flat=True))) == (2, [KEY, OTHER])


def test_a_refused_start_says_why_keeps_the_choice_and_starts_nothing(client):
    lead, rv, judge, eval_set = candidate()
    start_plan(criterion=rv.criteria.get(key=OTHER), eval_set=eval_set, judge_config=judge, by=lead, seed=7)
    client.force_login(lead)
    marks = [m.pk for m in GatingMark.objects.active()]
    answer = client.post(url("audit_group_start"), {"marks": marks, "eval_set": eval_set.pk})
    body = answer.content.decode()
    assert answer.status_code == 422
    assert "next_step: next_step on rc-1 with gpt-judge already has an open audit plan. Nothing was started." in body
    assert answer.context["form"]["marks"].value() == [str(m) for m in marks]  # kept as chosen
    assert not AuditPlanGroup.objects.exists() and AuditPlan.objects.count() == 1
    nothing = client.post(url("audit_group_start"), {"eval_set": eval_set.pk})
    assert nothing.status_code == 422 and "Tick at least one gating criterion." in nothing.content.decode()


def test_the_group_page_shows_a_row_per_criterion_and_the_release_s_line(client):
    lead, _rv, group = fail_on_next_step()
    client.force_login(lead)
    body = client.get(url("audit_group", group)).content.decode()
    assert "FAIL came from next_step at label 20: the release fails when any criterion fails." in body
    assert "each criterion passes at α = <strong>0.025</strong> and fails at α/k = <strong>0.0125</strong>" in body
    assert body.count("PASS at 0.025, FAIL at 0.0125") == 2
    assert "lower bound is read at α (its PASS test&#x27;s level) and its upper bound at α/k" not in body
    assert "lower bound is read at α (its PASS test's level) and its upper bound at α/k" in body
    assert "failed wrongly at most 2.5% when every criterion meets its minimum" in body
    assert '<span class="pill decision-failed">FAIL</span> at label 20' in body
    assert '<span class="pill decision-passed">PASS</span> at label 20' in body
    assert "No more labels needed" in body
    # Decided and current: the panel's poll stops.
    assert client.get(url("audit_group_figures", group)).status_code == 286


def test_an_undecided_group_names_its_open_criteria_and_each_one_s_forecast(client):
    lead, rv, judge, eval_set = candidate()
    group = group_of(lead, rv, judge, eval_set)
    client.force_login(lead)
    assert client.post(url("audit_group_release", group), {"k": 10}).status_code == 302
    assert AuditOrder.objects.get(pk=group.plans.first().order_id).released == 10
    body = client.get(url("audit_group", group)).content.decode()
    assert "Not decided: PASS needs every criterion; waiting for correct_amount, next_step." in body
    assert "Open criteria: <code>correct_amount</code>, <code>next_step</code>." in body
    assert body.count("more labels, 9 in 10 within") == 2
    assert "a FAIL of any one criterion may decide it sooner" in body
    assert "A forecast of the release itself (every criterion replayed on the same simulated orders" in body
    assert client.get(url("audit_group_figures", group)).status_code == 200  # still polling


def test_the_group_page_reads_stored_figures_in_as_many_queries_whatever_the_labels(client):
    lead, rv, judge, eval_set = candidate()
    group = group_of(lead, rv, judge, eval_set)
    client.force_login(lead)
    client.get(url("audit_group", group))
    with CaptureQueriesContext(connection) as before:
        client.get(url("audit_group", group))
    _lead, _rv, decided = fail_on_next_step_again(lead, rv, group)
    client.get(url("audit_group", decided))  # the plans' workers (played here) compute the figures of this gold
    with CaptureQueriesContext(connection) as after:
        client.get(url("audit_group", decided))
    assert len(before) == len(after) == GROUP_PAGE_QUERIES, [q["sql"][:80] for q in after.captured_queries]


def fail_on_next_step_again(lead, rv, group):
    from calibration.audits.groups import release_group_next
    from tests.audit_helpers import in_order
    from tests.calibration.audits.test_audit_groups import label

    release_group_next(group=group, by=lead, k=25)
    label(rv, in_order(group.plans.first())[:25], {KEY: "PASS", OTHER: "FAIL"})
    group.refresh_from_db()
    return lead, rv, group


def test_reviewers_read_annotators_get_403_and_only_leads_start_release_or_close(client):
    lead, rv, judge, eval_set = candidate()
    group = group_of(lead, rv, judge, eval_set)
    reviewer = make.make_user("rita", Role.REVIEWER)
    annotator = make.make_user("ann", Role.ANNOTATOR)
    client.force_login(reviewer)
    assert client.get(url("audit_group", group)).status_code == 200
    assert "Release to the labeling queue" not in client.get(url("audit_group", group)).content.decode()
    for name in ("audit_group_release", "audit_group_close"):
        assert client.post(url(name, group), {"k": 5}).status_code == 403
    assert client.get(url("audit_group_start")).status_code == 403
    client.force_login(annotator)
    for name in ("audit_group", "audit_group_figures"):
        assert client.get(url(name, group)).status_code == 403
    group.refresh_from_db()
    assert group.closed_at is None and AuditOrder.objects.get(pk=group.plans.first().order_id).released == 0
    # Negative control: the lead releases and closes.
    client.force_login(lead)
    client.post(url("audit_group_release", group), {"k": 5})
    client.post(url("audit_group_close", group))
    group.refresh_from_db()
    assert group.closed_at is not None and AuditOrder.objects.get(pk=group.plans.first().order_id).released == 5


def test_another_workspace_s_group_answers_as_a_missing_one(client):
    lead, rv, judge, eval_set = candidate()
    group = group_of(lead, rv, judge, eval_set)
    elsewhere = make.make_user("olga", Role.LEAD, workspace=make.make_workspace("beta"))
    client.force_login(elsewhere)
    for method, name in (
        ("get", "audit_group"),
        ("get", "audit_group_figures"),
        ("post", "audit_group_release"),
        ("post", "audit_group_close"),
    ):
        call = getattr(client, method)
        foreign, missing = call(url(name, group), {"k": 1}), call(url(name, MISSING), {"k": 1})
        assert foreign.status_code == 404 and same_answer(foreign, missing), name
    group.refresh_from_db()
    assert group.closed_at is None
    client.force_login(lead)  # negative control: its own lead opens it
    assert client.get(url("audit_group", group)).status_code == 200


def test_a_group_plan_s_page_says_the_gate_reads_it_at_the_group_s_levels(client):
    # Only next_step decides on an audit (the gate's own k is 1), but it was started in a group of 2: the gate reads
    # its FAIL at alpha / 2 (test_audit_groups.py), and its plan's page says so.
    from tests.calibration.audits.test_audit_groups import only_next_step_audited

    only_next_step_audited(together=True)
    plan = AuditPlan.objects.get(criterion__key=OTHER)
    client.force_login(plan.created_by)
    body = client.get(reverse("calibration:audit_plan", args=[plan.pk])).content.decode()
    assert f"next_step is one of the 2 criteria of audit group {plan.group_id} (one sample): the gate reads" in body
    assert "its FAIL at 0.0125 (alpha / 2)" in body


def test_the_same_plan_started_alone_shows_no_such_line_as_a_negative_control(client):
    from tests.calibration.audits.test_audit_groups import only_next_step_audited

    only_next_step_audited(together=False)
    plan = AuditPlan.objects.get(criterion__key=OTHER)
    client.force_login(plan.created_by)
    body = client.get(reverse("calibration:audit_plan", args=[plan.pk])).content.decode()
    assert 'id="audit-gate-sides"' not in body
