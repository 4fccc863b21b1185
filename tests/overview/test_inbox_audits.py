"""The lead's Home and audit plans (issue 22): the plans waiting for labels, and the plans decided or closed this
week, each linked to its page; leads only; a bounded number of queries however many plans are open."""

from __future__ import annotations

import re
from datetime import timedelta

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.urls import reverse
from django.utils import timezone

from calibration.audits.plans import close_plan, release_plan_next, start_plan
from calibration.models import AuditPlan
from evals.models import Role
from judging.models import JudgeRun
from labeling.audit_order import release_next
from overview.lead_inbox import MAX_AUDIT_CHECKS, audit_plans
from tests.audit_helpers import KEY, candidate, gold, in_order, one_pass_short, plan_on
from tests.factories import annotate, annotator, bulk_verdicts, default_workspace, make_eval_set, make_user, open_queue
from tests.overview.test_inbox import section

pytestmark = pytest.mark.django_db
HOME = reverse("home")


def plan_url(plan) -> str:
    return reverse("calibration:audit_plan", args=[plan.pk])


def home(client, user) -> str:
    client.force_login(user)
    return client.get(HOME).content.decode()


def test_an_undecided_plan_says_how_far_its_labels_are_and_that_annotators_have_some_waiting(client):
    c = candidate(n=40)
    plan = plan_on(c, release=25)
    for output in in_order(plan)[:10]:
        gold(c, output, "PASS")
    waiting = section(home(client, c.lead), "audit_waiting")
    assert "the audit of correct_amount on rc-1 with gpt-judge: 10 labeled of about" in waiting
    # By hand: 25 released, the first 10 labeled: 15 wait. The forecast's figure is the model's, but bounded by
    # hand: the test decides nothing before 20 gold items, and N is 40.
    assert "(40 outputs); 15 released wait for annotators" in waiting
    needed = int(re.search(r"10 labeled of about (\d+) needed by the forecast", waiting).group(1))
    assert 20 <= needed <= 40
    assert f'<a href="{plan_url(plan)}">Follow the audit →</a>' in waiting
    assert section(home(client, c.lead), "audit_decided") == ""


def test_when_every_released_output_is_labeled_the_lead_is_asked_to_release_more(client):
    c = candidate(n=40)
    plan = plan_on(c, release=10)
    order = in_order(plan)
    for output in order[:9]:
        gold(c, output, "PASS")
    gold(c, order[9], "PASS", second="FAIL")  # a disagreement: labeled, gold pending
    waiting = section(home(client, c.lead), "audit_waiting")
    assert "10 labeled of about" in waiting and ", 1 awaiting gold; every released output is labeled" in waiting
    assert f'<a href="{plan_url(plan)}">Label these next →</a>' in waiting
    release_plan_next(plan=plan, by=c.lead, k=5)  # negative control: the annotators have work again
    waiting = section(home(client, c.lead), "audit_waiting")
    assert "5 released wait for annotators" in waiting and "Label these next" not in waiting


def test_a_decided_plan_moves_to_the_decided_section_until_closed_and_stays_there_for_the_week(client):
    # By hand: N = 40, minimum 0.5; 19 gold passes decide nothing, the 20th reaches 0.5 x 40 (the exact rule).
    c, plan, order = one_pass_short(release=40)
    body = home(client, c.lead)
    assert "19 labeled of about" in section(body, "audit_waiting") and section(body, "audit_decided") == ""
    gold(c, order[19], "PASS")
    body = home(client, c.lead)
    decided = section(body, "audit_decided")
    assert (
        "the audit of correct_amount on rc-1 with gpt-judge decided PASS at label 20 of 40: its labels are no "
        "longer needed" in decided
    )
    assert f'<a href="{plan_url(plan)}">Read the decision, close the plan →</a>' in decided
    assert section(body, "audit_waiting") == ""
    close_plan(plan=plan, by=c.lead)
    decided = section(home(client, c.lead), "audit_decided")
    assert "rc-1 with gpt-judge was closed: PASS at label 20 of 40 (20 labeled of 40)" in decided
    AuditPlan.objects.filter(pk=plan.pk).update(closed_at=timezone.now() - timedelta(days=8))
    body = home(client, c.lead)  # a week on, it is history: the Audits page still lists it
    assert 'data-kind="audit_decided"' not in body and plan_url(plan) not in body


def test_a_plan_closed_undecided_says_so(client):
    c = candidate(n=40)
    plan = plan_on(c, release=10)
    for output in in_order(plan)[:5]:
        gold(c, output, "PASS")
    close_plan(plan=plan, by=c.lead)
    decided = section(home(client, c.lead), "audit_decided")
    assert "was closed: undecided (5 labeled of 40)" in decided


def test_only_a_lead_is_shown_audit_plans_on_home(client):
    c = candidate(n=40)
    plan = plan_on(c, release=40)
    for output in in_order(plan)[:20]:
        gold(c, output, "PASS")  # decided
    second = make_eval_set("rc-2")
    bulk_verdicts(second, c.rubric_version, c.judge, {KEY: {"PASS": 12}})
    open_queue(second, c.rubric_version, c.lead)
    undecided = start_plan(
        criterion=c.rubric_version.criteria.get(key=KEY), eval_set=second, judge_config=c.judge, by=c.lead, seed=1
    )
    lead = home(client, c.lead)
    assert plan_url(plan) in section(lead, "audit_decided") and plan_url(undecided) in section(lead, "audit_waiting")
    for role in (Role.REVIEWER, Role.ANNOTATOR):
        body = home(client, make_user(f"someone-{role}", role))
        assert "audit_" not in body and plan_url(plan) not in body and plan_url(undecided) not in body


def more_plans(c, count: int, start: int = 0) -> list[AuditPlan]:
    criterion = c.rubric_version.criteria.get(key=KEY)
    plans = []
    for i in range(start, start + count):
        es = make_eval_set(f"rc-more-{i}")
        bulk_verdicts(es, c.rubric_version, c.judge, {KEY: {"PASS": 20}})
        open_queue(es, c.rubric_version, c.lead)
        plans.append(start_plan(criterion=criterion, eval_set=es, judge_config=c.judge, by=c.lead, seed=i))
    return plans


def audit_queries() -> int:
    workspace = default_workspace()  # read before counting: the inbox is given the request's workspace
    with CaptureQueriesContext(connection) as queries:
        audit_plans(workspace)
    return len(queries)


def test_home_reads_the_figures_of_at_most_a_few_plans_and_lists_the_rest(client):
    c = candidate(n=20)
    assert audit_queries() == 1  # the list of plans, empty
    first = plan_on(c, release=5)
    # and the stored figures of every plan checked, in one query (issue 37; six per plan when Home computed them)
    assert audit_queries() == 1 + 1
    plans = [first, *more_plans(c, MAX_AUDIT_CHECKS + 1)]
    capped = audit_queries()
    assert capped == 1 + 1
    plans += more_plans(c, 1, start=MAX_AUDIT_CHECKS + 1)
    assert audit_queries() == capped  # past the cap, a plan costs no query
    waiting = section(home(client, c.lead), "audit_waiting")
    assert waiting.count("labeled of about") == MAX_AUDIT_CHECKS  # the newest first
    assert waiting.count("open; its figures are on its page") == 3 and plan_url(first) in waiting
    assert all(plan_url(p) in waiting for p in plans)


def test_a_judged_candidate_labeled_for_its_audit_is_not_a_run_waiting_for_a_gating_decision(client):
    c = candidate(n=40)  # the judge's run on rc-1 is done
    plan = plan_on(c, release=10)
    for output in in_order(plan)[:5]:
        gold(c, output, "PASS")
    JudgeRun.objects.update(finished_at=timezone.now())
    assert "rc-1" not in section(home(client, c.lead), "uncalibrated")
    AuditPlan.objects.all().delete()  # negative control: the same labeled run without its plan
    assert "over rc-1 finished: no gating decision since" in section(home(client, c.lead), "uncalibrated")


def test_a_reviewer_sees_which_waiting_disagreements_an_open_audit_plan_released(client):
    c = candidate(n=40)
    plan = plan_on(c, release=10)
    order = in_order(plan)
    for output in order[:3]:
        gold(c, output, "PASS", second="FAIL")  # released, audited criterion: counted
    gold(c, order[20], "PASS", second="FAIL")  # a disagreement the plan has not released: not counted
    annotate(order[4], c.rubric_version, annotator("amy"), 1, {"next_step": "PASS"})
    annotate(order[4], c.rubric_version, annotator("bo"), 2, {"next_step": "FAIL"})  # another criterion
    reviewer = make_user("rey", Role.REVIEWER)
    body = home(client, reviewer)
    card = body.split('id="adjudications"', 1)[1].split("</section>", 1)[0]
    assert "5 disagreements" in card
    assert f'<a href="{plan_url(plan)}" class="audit-held">3 of them for audit plan {plan.pk}</a>' in card
    close_plan(plan=plan, by=c.lead)  # negative control: a closed plan waits on nothing
    assert "audit-held" not in home(client, reviewer)


def audit_reads(queries) -> int:
    return sum(1 for q in queries if "auditplan" in q["sql"] or "auditorderitem" in q["sql"])


def test_the_reviewers_home_reads_the_audit_plans_in_two_queries_however_many(client):
    c = candidate(n=20)
    reviewer = make_user("rey", Role.REVIEWER)
    client.force_login(reviewer)
    client.get(HOME)
    plan = plan_on(c, release=5)
    with CaptureQueriesContext(connection) as nothing_waits:
        client.get(HOME)
    assert audit_reads(nothing_waits) == 0  # no disagreement: the plans are not read
    gold(c, in_order(plan)[0], "PASS", second="FAIL")
    with CaptureQueriesContext(connection) as one:
        client.get(HOME)
    plans = more_plans(c, 3)
    for p in plans:
        release_next(order=p.order, k=5)
        gold(c, in_order(p)[0], "PASS", second="FAIL")
    with CaptureQueriesContext(connection) as four:
        body = client.get(HOME).content.decode()
    assert all(f"1 of them for audit plan {p.pk}" in body for p in [plan, *plans])
    # The open plans and their released outputs: two queries for all plans; besides them each eval set's
    # waiting items read their audit positions (they come first in the adjudication queue), one query a set.
    assert audit_reads(one) - 1 == audit_reads(four) - 4 == 2
