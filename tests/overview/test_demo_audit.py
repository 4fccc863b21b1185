"""The audit demo (`load_demo --audit`): a release candidate with a partly labeled plan, undecided, so a newcomer
sees the interval and the forecast; made the same way every time, and once."""

from __future__ import annotations

from io import StringIO

import pytest
from django.core.management import call_command
from django.urls import reverse

from calibration.audits.figures import plan_figures
from calibration.models import AuditPlan, GatingMark
from evals.models import Output, RubricVersion, User, Workspace
from overview.demo import audit

pytestmark = [pytest.mark.slow, pytest.mark.django_db]  # slow: each test loads the whole demo


def refund_support() -> Workspace:
    return Workspace.objects.get(slug="refund-support")  # the billing team's rubric has the same name


def test_load_demo_without_audit_makes_no_plan_and_leaves_the_walks_decisions_to_the_lead():
    call_command("load_demo", verbosity=0, stdout=StringIO())
    assert not AuditPlan.objects.exists() and not GatingMark.objects.exists()
    assert RubricVersion.objects.by_ref("refund-support@1", refund_support()).status == RubricVersion.Status.DRAFT


def test_the_audit_demo_is_a_partly_labeled_undecided_plan_on_a_candidate(client):
    out = StringIO()
    call_command("load_demo", "--audit", verbosity=0, stdout=out)
    plan = AuditPlan.objects.get()
    assert f"audit plan {plan.pk} of correct_amount on refund-support-rc2" in out.getvalue()
    mark = GatingMark.objects.get()
    assert (mark.criterion.key, mark.min_pass_rate, mark.calibration_eval_set.name) == (
        "correct_amount",
        0.85,
        "refund-support-demo",
    )
    assert (plan.eval_set.name, plan.order.seed, plan.min_pass_rate, plan.design) == (
        "refund-support-rc2",
        audit.ORDER_SEED,
        0.85,
        "stratified",
    )
    assert plan_figures(plan).released == audit.RELEASED
    assert Output.objects.filter(case__eval_set=plan.eval_set).count() == audit.REQUESTS
    f = plan_figures(plan)
    assert f.N == audit.REQUESTS and f.n_labeled == audit.LABELED
    assert f.decided is None and f.estimate is not None and 0 < f.lower < f.upper < 1
    assert f.n_gold >= f.min_gold and f.n_pending > 0  # a disagreement still waits for rita
    # Of the 36: four outputs both annotators called N/A (no refund amount to check: outside the pass rate)
    # and a disagreement waiting for rita. Both batches are the order's next 25, whatever the judge said of them
    # (issue 41): 27 of the 36 are outputs it passed, near its 111 of 150.
    assert (f.n_gold, f.n_not_applicable, f.n_awaiting_gold, f.n_gold_cant_tell) == (31, 4, 1, 0)
    assert (f.strata_sizes, f.strata_labeled) == ((111, 39), (27, 9))
    # Its pass rate is near the minimum: a decision is unlikely in the next 25, likelier in 75, not certain.
    assert f.forecast.p_decided < 0.5 and f.forecast.expected_labels > 25
    assert 0 < plan_figures(plan, k=75).forecast.p_decided < 1
    client.force_login(User.objects.get(username="lee"))
    page = client.get(reverse("calibration:audit_plan", args=[plan.pk])).content.decode()
    assert "Forecast" in page and "not yet" in page
    assert "31 gold PASS or FAIL, 4 N/A, 1 pending" in page
    assert "27 of the 111 the judge passed, 9 of the 39 others" in page
    assert "after the next 25 labels, <strong>no decision</strong> in any of the simulations" in page
    shown = StringIO()
    call_command("audit_plan", "show", str(plan.pk), "--workspace", "refund-support", stdout=shown)
    assert "labeled 36 of 150 (31 gold PASS or FAIL, 4 N/A, 1 pending, 0 Can't tell)" in shown.getvalue()
    assert "stratified by the judge's verdict: 27 of the 111 it passed, 9 of the 39 others labeled" in shown.getvalue()
    assert "after 25 more labels no simulation decides" in shown.getvalue()
    # As the README says: lee's Home lists it, linked, with the labels so far (36 of the 150) and who it waits for.
    home = client.get(reverse("home")).content.decode()
    waiting = home.split('data-kind="audit_waiting"', 1)[1].split("</ul>", 1)[0]
    assert reverse("calibration:audit_plan", args=[plan.pk]) in waiting and "36 labeled of about" in waiting
    assert "14 released wait for annotators" in waiting  # 50 released, the first 36 labeled
    assert "36 labeled of about" in waiting and ", 1 awaiting gold; 14 released" in waiting
    # Once: a second load adds nothing.
    again = StringIO()
    call_command("load_demo", "--audit", verbosity=0, stdout=again)
    assert AuditPlan.objects.count() == 1 and "Demo already loaded, nothing added" in again.getvalue()
    assert plan_figures(plan).n_labeled == audit.LABELED
