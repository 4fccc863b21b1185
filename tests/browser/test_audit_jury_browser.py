"""A jury audit in real Chromium (issue 38 item 1): a lead picks an extra judge config on the start form, and the
plan page, once gold arrives, shows which signals the tests read with each one's correlation with gold, at a
laptop's and a desktop's size without a horizontal scroll."""

from __future__ import annotations

import pytest
from django.urls import reverse
from playwright.sync_api import expect

from calibration.models import AuditPlan
from labeling.audit_order import release_next

from ..audit_helpers import KEY, candidate, gold, in_order
from ..factories import add_verdict, make_judge, make_run
from .browser_helpers import screenshot
from .test_audit_browser import MARK, no_horizontal_scroll
from .test_labeling_browser import log_in

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

# The figures are a worker's (issue 37): the page polls every 2 s while they are behind.
FIGURES_WAIT = 30_000


def test_a_lead_picks_a_jury_and_the_plan_page_shows_its_signals(live_server, new_page):
    c = candidate(n=60)
    # The judge sampled three times (its vote share says how sure it was), and an instrument beside it.
    judge_run = make_run(c.eval_set, c.rubric_version, c.judge, agent_version="default")
    instrument = make_judge("length-instrument")
    instrument_run = make_run(c.eval_set, c.rubric_version, instrument, agent_version="default")
    for i, output in enumerate(c.outputs):
        for s, vote in enumerate(["PASS", "PASS", "FAIL"] if i % 3 else ["PASS"] * 3):
            add_verdict(judge_run, output, KEY, vote if i % 5 else "FAIL", sample=s)
        add_verdict(instrument_run, output, KEY, "FAIL" if i % 4 == 3 else "PASS")

    lead = new_page(1366, 768)
    log_in(lead, live_server.url, "lee")
    lead.goto(live_server.url + reverse("calibration:audit_plan_start"))
    lead.get_by_label("Gating criterion and judge").select_option(label=MARK)
    lead.get_by_label("Release candidate (eval set)").select_option(label="rc-1")
    lead.get_by_label("Extra judge configs (the jury)").select_option(label="length-instrument")
    lead.get_by_role("button", name="Start the plan").click()
    expect(lead.locator("#audit-decision")).to_have_text("not yet")
    plan = AuditPlan.objects.get()
    assert plan.predictor == "jury" and plan.signals.count() == 2

    release_next(order=plan.order, k=30)
    index = {o.pk: i for i, o in enumerate(c.outputs)}
    for output in in_order(plan)[:24]:
        i = index[output.pk]
        gold(c, output, "PASS" if i % 5 and (i % 3 or i % 2) else "FAIL")
    for width, height in ((1366, 768), (1920, 1080)):
        page = lead if width == 1366 else new_page(width, height)
        if page is not lead:
            log_in(page, live_server.url, "lee")
        page.goto(live_server.url + reverse("calibration:audit_plan", args=[plan.pk]))
        expect(page.locator("#audit-labeled")).to_contain_text("24 of 60", timeout=FIGURES_WAIT)
        table = page.locator("#audit-signals")
        expect(table).to_contain_text("gpt-judge")
        expect(table).to_contain_text("length-instrument")
        expect(table).to_contain_text("The jury together")
        assert no_horizontal_scroll(page)
        page.locator("#audit-predictor").scroll_into_view_if_needed()
        screenshot(page, f"s19-jury-{width}")
