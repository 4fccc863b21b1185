"""An audit of a release candidate in real Chromium (issue 22): a lead starts a plan and releases the first 25
outputs on the pages; two annotators label the first one on the labeling page and disagree, a reviewer settles
it; more gold arrives; the lead's plan page, never reloaded, shows the interval narrow, the forecast change and
the decision appear."""

from __future__ import annotations

import re

import pytest
from playwright.sync_api import expect

from calibration.models import AuditPlan
from evals.models import Role
from labeling.models import Annotation, GoldLabel

from ..audit_helpers import KEY, candidate, in_order
from ..factories import annotate, annotator, make_user
from .browser_helpers import screenshot
from .test_labeling_browser import criterion, log_in

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

# The figures panel polls every 5 s (calibration/audits/views.py POLL): a wait of three polls and some.
POLL_WAIT = 20_000
MARK = "correct_amount of refund@1, judged by gpt-judge (minimum 0.5 at 0.95)"


def interval(page) -> tuple[float, float]:
    low, high = re.findall(r"[\d.]+", page.locator("#audit-interval").inner_text())
    return float(low), float(high)


def label_next(page, answers: dict[str, str]) -> str:
    """Next on the labeling page, every criterion answered (evidence NONE), Submit; the case id labeled."""
    page.get_by_role("button", name="Next").click()
    case_id = page.get_by_role("heading", level=1).inner_text()
    for key, outcome in answers.items():
        box = criterion(page, key)
        box.get_by_label(outcome, exact=True).check()
        box.get_by_label(f"Evidence for {key}").fill("NONE")
        box.get_by_label(f"Evidence for {key}").press("Tab")
        expect(page.locator(f"#status-{key}")).to_contain_text("Saved")
    page.get_by_role("button", name="Submit").click()
    expect(page.get_by_text(f"Submitted {case_id}.")).to_be_visible()
    return case_id


def agreed_pass(c, outputs) -> None:
    """Both annotators agree PASS on each output. The page handed amy and bo the next output as an empty draft
    after Submit; it goes, as if they stopped there, so the slots are free."""
    Annotation.objects.filter(status=Annotation.Status.DRAFT).delete()
    for output in outputs:
        annotate(output, c.rubric_version, annotator("cy"), 1, {KEY: "PASS"})
        annotate(output, c.rubric_version, annotator("di"), 2, {KEY: "PASS"})


def no_horizontal_scroll(page) -> bool:
    return page.evaluate("() => document.documentElement.scrollWidth <= window.innerWidth")


def test_a_lead_starts_an_audit_labels_arrive_and_the_decision_appears_without_a_reload(live_server, new_page):
    c = candidate(n=40)  # correct_amount gates at minimum 0.5; the judge said PASS on all 40 outputs of rc-1
    annotator("amy"), annotator("bo"), make_user("rey", Role.REVIEWER)

    lead = new_page(1366, 768)
    log_in(lead, live_server.url, "lee")
    lead.get_by_role("link", name="Audits").click()
    lead.get_by_role("link", name="Start an audit plan…").click()
    lead.get_by_label("Gating criterion and judge").select_option(label=MARK)
    lead.get_by_label("Release candidate (eval set)").select_option(label="rc-1")
    lead.get_by_label("Seed of the order").fill("7")
    # The default design (uniform since issue 41: releases are blind to the judge whatever the design).
    expect(lead.get_by_label("Design")).to_have_value("uniform")
    lead.get_by_role("button", name="Start the plan").click()
    expect(lead.locator("#audit-decision")).to_have_text("not yet")
    plan = AuditPlan.objects.get()
    assert (plan.order.seed, plan.min_pass_rate, plan.created_by.username) == (7, 0.5, "lee")
    expect(lead.locator("#audit-labeled")).to_contain_text("0 of 40")
    assert interval(lead) == (0.0, 1.0)
    expect(lead.locator("#id_k")).to_have_value("25")
    lead.get_by_role("button", name="Label these next").click()
    expect(lead.locator("#audit-release")).to_contain_text("may now hand out the first 25 of 40 outputs")
    lead.evaluate("() => { window.notReloaded = true; }")  # gone if the page reloads

    # The first output of the order, labeled on the real pages: the annotators disagree, the reviewer settles.
    order = in_order(plan)
    first, second = new_page(), new_page()
    log_in(first, live_server.url, "amy")
    log_in(second, live_server.url, "bo")
    assert label_next(first, {KEY: "PASS", "next_step": "PASS"}) == order[0].case.case_id
    assert label_next(second, {KEY: "FAIL", "next_step": "PASS"}) == order[0].case.case_id
    reviewer = new_page()
    log_in(reviewer, live_server.url, "rey")
    reviewer.get_by_role("link", name="Adjudicate").first.click()
    reviewer.get_by_role("link", name="Start with the first").click()
    reviewer.get_by_label("PASS", exact=True).check()
    reviewer.get_by_label(re.compile("^Rationale")).fill("The amount matches the reference; PASS.")
    reviewer.get_by_role("button", name="Save gold label").click()
    expect(reviewer.get_by_text(re.compile(f"Gold for {KEY} on .*: PASS."))).to_be_visible()
    assert GoldLabel.objects.get(criterion__key=KEY).output == order[0]  # the queue handed out position 1

    expect(lead.locator("#audit-labeled")).to_contain_text("1 of 40", timeout=POLL_WAIT)
    forecast_before = lead.locator("#audit-forecast").inner_text()
    wide = interval(lead)

    # More gold along the order (made directly: the pages above showed the path), all PASS.
    agreed_pass(c, order[1:15])
    expect(lead.locator("#audit-labeled")).to_contain_text("15 of 40", timeout=POLL_WAIT)
    narrow = interval(lead)
    assert narrow[1] - narrow[0] < wide[1] - wide[0]
    assert lead.locator("#audit-forecast").inner_text() != forecast_before
    expect(lead.locator("#audit-decision")).to_have_text("not yet")
    expect(lead.locator("#audit-decision-words")).to_contain_text("before 20 gold items (15 so far)")

    # The page fits 1366x768 and 1920x1080, the decision and the interval above the fold.
    assert no_horizontal_scroll(lead)
    assert lead.locator("#audit-interval").bounding_box()["y"] < 768 - 40
    screenshot(lead, "audit-plan-1366")
    lead.set_viewport_size({"width": 1920, "height": 1080})
    assert no_horizontal_scroll(lead)
    screenshot(lead, "audit-plan-1920")
    lead.set_viewport_size({"width": 1366, "height": 768})

    # By hand: 20 gold passes of 40 reach 0.5 x 40 whatever the rest are: the exact rule decides PASS at 20.
    agreed_pass(c, order[15:20])
    expect(lead.locator("#audit-decision")).to_have_text("PASS", timeout=POLL_WAIT)
    expect(lead.locator("#audit-decision-words")).to_contain_text("PASS at label 20 of 40, by the exact rule")
    expect(lead.locator("#audit-saved")).to_contain_text("20 of 40")
    expect(lead.locator("#audit-forecast")).to_have_count(0)
    # The poll that brought the decision swapped "Label these next" out: its labels are no longer needed.
    expect(lead.locator("#audit-release")).to_contain_text("its labels are no longer needed")
    expect(lead.get_by_role("button", name="Label these next")).to_have_count(0)
    assert lead.evaluate("() => window.notReloaded === true")
    screenshot(lead, "audit-plan-decided")
    lead.set_viewport_size({"width": 1920, "height": 1080})
    assert no_horizontal_scroll(lead)
    screenshot(lead, "audit-plan-decided-1920")
    lead.set_viewport_size({"width": 1366, "height": 768})

    lead.get_by_role("button", name="Close the plan").click()
    expect(lead.get_by_text(f"Audit plan {plan.pk} closed")).to_be_visible()
    lead.get_by_role("link", name="Audit plans").click()
    expect(lead.locator("#closed")).to_contain_text(f"plan {plan.pk}")


def test_a_refused_start_keeps_what_the_lead_chose(live_server, new_page):
    candidate(n=12)
    lead = new_page(1366, 768)
    log_in(lead, live_server.url, "lee")
    lead.goto(live_server.url + "/calibration/audits/start")
    lead.get_by_label("Gating criterion and judge").select_option(label=MARK)
    lead.get_by_label("Release candidate (eval set)").select_option(label="rc-1")
    lead.get_by_label("Minimum pass rate").fill("0.3")
    lead.get_by_role("button", name="Start the plan").click()
    expect(lead.get_by_role("alert")).to_contain_text("may not be looser than the gating mark's")
    expect(lead.get_by_label("Minimum pass rate")).to_have_value("0.3")
    expect(lead.get_by_label("Release candidate (eval set)").locator("option:checked")).to_have_text("rc-1")
    assert not AuditPlan.objects.exists() and no_horizontal_scroll(lead)
    screenshot(lead, "audit-start-refused")
