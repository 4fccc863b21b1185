"""The audits' design and predictor where a lead decides (issue 38 item 1), in real Chromium at a laptop's size: the
audit plans list's compact column, and the gate's result page naming the jury the audit read."""

from __future__ import annotations

import io

import pytest
from django.core.management import call_command
from django.urls import reverse
from playwright.sync_api import expect

from calibration.audits.plans import close_plan
from calibration.models import AuditPlan, GateResult

from ..audit_helpers import KEY, candidate, gold, in_order, plan_on
from ..factories import add_verdict, make_judge, make_run
from .browser_helpers import screenshot
from .test_audit_browser import no_horizontal_scroll
from .test_labeling_browser import log_in

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def test_the_list_and_the_gate_page_name_the_design_and_the_jury(live_server, new_page):
    c = candidate(n=40, decide_on="audit")
    instrument = make_judge("length-instrument")
    run = make_run(c.eval_set, c.rubric_version, instrument, agent_version="default")
    for i, output in enumerate(c.outputs):
        add_verdict(run, output, KEY, "FAIL" if i % 4 == 3 else "PASS")
    close_plan(plan=plan_on(c, design="stratified"), by=c.lead)  # an earlier plan, closed: the list shows both
    plan = plan_on(c, release=40, extra_judges=[instrument])
    assert plan.predictor == AuditPlan.Predictor.JURY
    for output in in_order(plan)[:20]:
        gold(c, output, "PASS")  # 20 of 40 at a minimum of 0.5: PASS by the exact rule
    call_command("gate", "--eval-set", "rc-1", "--rubric", "refund@1", "--judge", "gpt-judge", stdout=io.StringIO())

    page = new_page(1366, 768)
    log_in(page, live_server.url, "lee")
    page.goto(live_server.url + reverse("calibration:audit_plans"))
    cell = page.locator(f"#plan-method-{plan.pk}")
    expect(cell).to_have_text("uniform" + "vote share + 1 config")  # two lines: the design, then the predictor
    expect(cell).to_have_attribute(
        "title", "uniform audit, predictor: the judge's vote share + 1 other config (length-instrument)"
    )
    expect(page.locator(".audit-method").last).to_have_text("stratified" + "verdict, two strata")
    assert no_horizontal_scroll(page)
    screenshot(page, "juryshow-plans")

    page.goto(live_server.url + reverse("calibration:gate_result", args=[GateResult.objects.get().pk]))
    expect(page.locator("#gate-decision")).to_have_text("Passed")
    expect(page.locator("#audit-method-correct_amount")).to_have_text(
        "uniform audit, predictor: the judge's vote share + 1 other config (length-instrument)"
    )
    page.locator("#audit-levels").scroll_into_view_if_needed()
    screenshot(page, "juryshow-gate")
