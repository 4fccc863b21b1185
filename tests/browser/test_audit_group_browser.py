"""An audit of every gating criterion in real Chromium (issue 37 item 3): a lead ticks the candidate's gating
criteria on the start page and starts one audit of them, releases the first 25 outputs; labels of both criteria
arrive; the group's page shows a row per criterion and the release's line, FAIL from next_step at label 20 (the
example worked by hand in tests/calibration/audits/test_audit_groups.py), without sideways scrolling on a laptop
or a desktop screen."""

from __future__ import annotations

import pytest
from playwright.sync_api import expect

from calibration.models import AuditPlanGroup

from ..audit_helpers import KEY, in_order
from ..calibration.audits.test_audit_groups import OTHER, candidate, label
from .browser_helpers import screenshot
from .test_labeling_browser import log_in

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def test_a_lead_audits_both_criteria_on_one_sample_and_reads_the_release_s_line(live_server, new_page):
    _lead, rv, _judge, _eval_set = candidate()
    page = new_page(1366, 768)
    log_in(page, live_server.url, "lee")
    page.goto(live_server.url + "/calibration/audits/")
    page.get_by_role("link", name="Audit every gating criterion…").click()
    for key in (KEY, OTHER):
        expect(page.get_by_label(f"{key} of refund@1", exact=False)).to_be_checked()
    page.get_by_label("Release candidate (eval set)").select_option(label="rc-1")
    page.get_by_role("button", name="Start the audit").click()
    expect(page.locator("#group-levels")).to_contain_text("fails at α/k = 0.0125")
    page.get_by_label("Label these next").fill("25")
    page.get_by_role("button", name="Release to the labeling queue").click()
    expect(page.get_by_text("may now hand out the first 25 outputs")).to_be_visible()
    group = AuditPlanGroup.objects.get()
    label(rv, in_order(group.plans.first())[:18], {KEY: "PASS", OTHER: "FAIL"})
    page.reload()
    expect(page.locator("#group-open")).to_contain_text("correct_amount")
    screenshot(page, "s19-group-undecided-1366")
    label(rv, in_order(group.plans.first())[18:25], {KEY: "PASS", OTHER: "FAIL"})
    # The panel polls (every 5 s) and shows the decision without a reload.
    expect(page.locator("#group-line")).to_contain_text("FAIL came from next_step at label 20", timeout=20_000)
    # On the same poll, "Label these next" gives way: the decision stands whatever the next labels say.
    expect(page.get_by_role("heading", name="No more labels needed")).to_be_visible()
    expect(page.get_by_role("button", name="Release to the labeling queue")).to_have_count(0)
    assert page.evaluate("() => document.documentElement.scrollWidth <= window.innerWidth")
    screenshot(page, "s19-group-1366")
    wide = new_page(1920, 1080)
    log_in(wide, live_server.url, "lee")
    wide.goto(f"{live_server.url}/calibration/audits/groups/{group.pk}/")
    expect(wide.locator("#group-decision")).to_have_text("FAIL")
    assert wide.evaluate("() => document.documentElement.scrollWidth <= window.innerWidth")
    screenshot(wide, "s19-group-1920")
