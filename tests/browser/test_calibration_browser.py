"""In real Chromium: the htmx swaps of the approval panel and the token panel, and the charts render."""

from __future__ import annotations

import pytest
from playwright.sync_api import expect

from api.models import GateToken
from calibration.gate.approvals import approve_rubric_version
from calibration.models import GatingMark
from evals.models import Role

from ..factories import bulk_calibration, make_eval_set, make_judge, make_rubric_version, make_user
from .browser_helpers import screenshot

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


@pytest.fixture
def calibrated():
    lead = make_user("lee", Role.LEAD)
    es, rv, judge = make_eval_set("cal"), make_rubric_version("refund", "1"), make_judge("gpt-judge")
    bulk_calibration(es, rv, judge, {"correct_amount": (145, 15, 5, 35), "next_step": (60, 20, 10, 30)})
    approve_rubric_version(rubric_version=rv, by=lead, reason="reviewed")
    return es, rv, judge


def log_in(page, base: str) -> None:
    page.goto(base + "/accounts/login/")
    page.get_by_label("Username").fill("lee")
    page.get_by_label("Password").fill("pw-for-tests-1")
    page.get_by_role("button", name="Log in").click()


def test_a_lead_is_refused_then_overrides_in_place(live_server, new_page, calibrated):
    es, rv, judge = calibrated
    page = new_page()
    log_in(page, live_server.url)
    url = f"{live_server.url}/calibration/report/{es.pk}/{rv.pk}/{judge.pk}/"
    page.goto(url)
    expect(page.locator("svg.kchart")).to_have_count(2)
    expect(page.locator("#criterion-correct_amount .cm-danger")).to_have_text("15")
    panel = page.locator("#approval-panel")
    panel.get_by_label("Criterion").select_option("next_step")
    panel.get_by_role("textbox", name="Reason").fill("we need it")
    panel.get_by_role("button", name="Mark as gating").click()
    expect(panel.get_by_text("next_step is in the trend tier")).to_be_visible()  # swapped in, no reload
    assert page.url == url and not GatingMark.objects.exists()
    panel = page.locator("#approval-panel")
    panel.get_by_role("checkbox", name="Override").check()
    panel.get_by_role("textbox", name="Reason").fill("The only refund check we have; humans read every FAIL")
    panel.get_by_role("button", name="Mark as gating").click()
    expect(page.locator("#criterion-next_step .gating-pill")).to_have_text("gating · override")
    screenshot(page, "calibration-override")
    mark = GatingMark.objects.get()
    assert mark.override and mark.tier == "trend"


def test_a_lead_records_that_nothing_gates_and_the_decision_is_listed(live_server, new_page, calibrated):
    from calibration.models import GatingReview

    es, rv, judge = calibrated
    page = new_page()
    log_in(page, live_server.url)
    page.goto(f"{live_server.url}/calibration/report/{es.pk}/{rv.pk}/{judge.pk}/")
    panel = page.locator("#approval-panel")
    panel.get_by_role("button", name="Record: nothing gates").click()  # no reason: the browser asks for one
    assert not GatingReview.objects.exists()
    panel.get_by_label("Why should nothing gate?").fill("next_step is only trend; correct_amount waits for v2")
    panel.get_by_role("button", name="Record: nothing gates").click()
    expect(page.get_by_text("Recorded for gpt-judge on refund@1: nothing gates.")).to_be_visible()
    expect(page.locator("ul.reviews li")).to_contain_text("nothing gates · lee")
    screenshot(page, "calibration-nothing-gates")
    assert GatingReview.objects.get().reason == "next_step is only trend; correct_amount waits for v2"


def test_a_new_token_is_shown_once_in_the_panel(live_server, new_page, calibrated):
    page = new_page()
    log_in(page, live_server.url)
    page.goto(live_server.url + "/api/gates/")
    panel = page.locator("#token-panel")
    panel.get_by_label("Project").fill("   ")  # passes the browser's "required", not the server
    panel.get_by_label("Rubric version").select_option(label="refund@1")
    panel.get_by_role("button", name="Create token").click()
    expect(page.locator("#token-panel").get_by_text("This field is required.")).to_be_visible()
    assert not GateToken.objects.exists()
    page.locator("#token-panel").get_by_label("Project").fill("refund-bot CI")
    page.locator("#token-panel").get_by_label("Rubric version").select_option(label="refund@1")
    page.locator("#token-panel").get_by_role("button", name="Create token").click()
    secret = page.locator("#new-token").inner_text()
    assert secret.startswith("icw_") and GateToken.objects.get().hint == secret[:8]
    page.reload()
    expect(page.locator("#new-token")).to_have_count(0)
    assert secret not in page.content()
