"""The lead's decision path in real Chromium: Home's inbox to a report's verdict and the queue it needs, a
disputed gold label back to a reviewer, the gate run from the browser, compare's defaults, the run page's
next step, and a lead in the admin. (A strict CSP is on: no inline script; wait_for_function takes functions.)"""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.utils import timezone
from playwright.sync_api import expect

from calibration.models import GateResult
from evals.models import Role, RubricVersion
from evals.role_groups import sync_role_group
from judging.models import JudgeConfig, JudgeRun
from labeling.models import GoldDispute, LabelingQueue

from ..factories import (
    bulk_calibration,
    bulk_verdicts,
    calibration_set,
    default_workspace,
    make_eval_set,
    make_judge,
    make_output,
    make_rubric_version,
    make_user,
    mark_as_gating,
)
from .browser_helpers import screenshot
from .test_labeling_browser import log_in

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


@pytest.fixture
def calibrated():
    """A draft rubric version, a finished judge run on a labeled eval set: one criterion in the gate tier,
    one with a good kappa on too few items, and outputs nobody has labeled yet."""
    make_user("lee", Role.LEAD)
    es, rv, judge = make_eval_set("cal"), make_rubric_version("refund", "1"), make_judge("gpt-judge")
    bulk_calibration(es, rv, judge, {"correct_amount": (145, 15, 5, 35), "next_step": (40, 2, 2, 16)})
    make_output(es, case_id="fresh")
    JudgeRun.objects.update(finished_at=timezone.now() - timedelta(hours=2))
    return es, rv, judge


def test_a_lead_goes_from_home_to_the_verdict_approves_and_opens_the_queue_it_needs(
    live_server,
    new_page,
    calibrated,
):
    es, rv, judge = calibrated
    page = new_page()
    log_in(page, live_server.url, "lee")
    decisions = page.locator("#decisions")
    expect(decisions.get_by_text("refund@1 is a draft")).to_be_visible()
    decisions.locator('[data-kind="uncalibrated"]').get_by_role("link", name="Read the calibration →").click()
    decision = page.locator("#decision")
    expect(decision).to_contain_text("1 may gate now (correct_amount); 1 could with more labels (next_step).")
    expect(page.locator("#verdict-next_step")).to_contain_text("fewer than the 100 a tier needs")
    screenshot(page, "decision-report")
    page.locator("#verdict-next_step").get_by_role("button", name="Open the labeling queue on refund@1").click()
    expect(page.get_by_text("cal is now labeled under refund@1.")).to_be_visible()
    assert LabelingQueue.objects.get(is_current=True).rubric_version == rv

    page.get_by_role("link", name="Home").click()
    page.locator("#decisions").get_by_role("link", name="Approve or replace →").click()
    page.get_by_label("Reason").fill("Definitions and examples read well; people agree.")
    page.get_by_role("button", name="Approve refund@1").click()
    expect(page.get_by_text("Approved refund@1.")).to_be_visible()
    assert RubricVersion.objects.get(pk=rv.pk).status == "approved"
    page.get_by_role("link", name="Home").click()
    expect(page.locator("#decisions").get_by_text("refund@1 is a draft")).to_have_count(0)


def test_a_disputed_false_pass_goes_back_to_a_reviewer_who_decides_it_again(live_server, new_page):
    make_user("lee", Role.LEAD)
    make_user("rev", Role.REVIEWER)
    es, rv, judge = make_eval_set("cal"), make_rubric_version("refund", "1"), make_judge("gpt-judge")
    calibration_set(
        es, rv, judge, [{"correct_amount": ("FAIL", "FAIL", "PASS")}, {"correct_amount": ("PASS", "PASS", "PASS")}]
    )
    lead = new_page()
    log_in(lead, live_server.url, "lee")
    lead.goto(f"{live_server.url}/calibration/report/{es.pk}/{rv.pk}/{judge.pk}/")
    lead.locator("#criterion-correct_amount svg.cmatrix a").first.click()  # the false-pass cell
    expect(lead.get_by_role("heading", name="False passes")).to_be_visible()
    lead.get_by_text("Dispute this gold label").click()
    lead.get_by_label("Why is this gold label wrong?").fill("The amount in the reply matches the tool result.")
    lead.get_by_role("button", name="Send back to adjudication").click()
    expect(lead.get_by_text("back in the adjudication queue")).to_be_visible()
    expect(lead.get_by_text("1 gold label disputed")).to_be_visible()

    reviewer = new_page()
    log_in(reviewer, live_server.url, "rev")
    inbox = reviewer.locator("#adjudications")
    expect(inbox).to_contain_text("1 gold dispute")
    inbox.get_by_role("link", name="Start with the oldest →").click()
    expect(reviewer.locator("#dispute")).to_contain_text("The amount in the reply matches the tool result.")
    reviewer.locator("label[for=gold-PASS]").click()
    reviewer.get_by_label("Rationale").fill("Re-read: $40 in both, the amount is right.")
    reviewer.get_by_role("button", name="Save gold label").click()
    expect(reviewer.get_by_text("Gold for correct_amount")).to_be_visible()
    dispute = GoldDispute.objects.get()
    assert not dispute.is_open and dispute.resolution.outcome == "PASS" and dispute.resolution.revision == 1


def test_a_lead_runs_the_gate_from_the_browser_and_reads_its_chart(live_server, new_page):
    lead = make_user("lee", Role.LEAD)
    cal, rc = make_eval_set("cal"), make_eval_set("rc-1")
    rv, judge = make_rubric_version("refund", "1"), make_judge("gpt-judge")
    mark_as_gating(rv, judge, ["correct_amount", "next_step"], cal, by=lead)
    bulk_verdicts(rc, rv, judge, {"correct_amount": {"PASS": 40}, "next_step": {"PASS": 30, "FAIL": 10}})
    page = new_page()
    log_in(page, live_server.url, "lee")
    page.get_by_role("link", name="Gate results").click()
    page.get_by_role("link", name="Run the gate…").click()
    form = page.locator("#gate-form")
    expect(form.get_by_label("Release candidate (eval set)")).to_have_value(str(rc.pk))
    form.get_by_label("Minimum pass rate").fill("0.5")  # looser than the lead's 0.9: refused, nothing stored
    form.get_by_role("button", name="Run the gate").click()
    expect(page.get_by_role("alert")).to_contain_text("a caller may only tighten the gate policy")
    assert not GateResult.objects.exists()
    page.locator("#gate-form").get_by_label("Minimum pass rate").fill("")
    page.locator("#gate-form").get_by_role("button", name="Run the gate").click()
    expect(page.locator("#gate-decision")).to_have_text("Failed")
    expect(page.locator("svg.gchart")).to_have_count(2)
    expect(page.locator("svg.gchart.unmet")).to_have_count(1)
    expect(page.locator("#binding-criterion")).to_have_text("next_step")
    screenshot(page, "gate-result")
    result = GateResult.objects.get()
    assert (result.source, result.asked_by, result.decision) == ("web", lead, "failed")


def test_compare_opens_on_the_last_two_judge_configs(live_server, new_page, calibrated):
    es, rv, judge = calibrated
    bulk_calibration(es, rv, make_judge("claude-judge"), {"correct_amount": (140, 5, 10, 45)})
    page = new_page()
    log_in(page, live_server.url, "lee")
    page.get_by_role("link", name="Calibration", exact=True).click()
    expect(page.locator(f"#grid-{es.pk} th.instrument")).to_have_count(2)
    page.get_by_role("button", name="Compare").click()
    table = page.locator("table.compare")
    expect(table).to_contain_text("A: gpt-judge")
    expect(table).to_contain_text("B: claude-judge")
    expect(page.locator(".errorlist")).to_have_count(0)


def test_the_run_page_trades_cancel_for_the_next_step_when_the_run_ends(live_server, new_page, calibrated):
    es, rv, judge = calibrated
    run = JudgeRun.objects.create(eval_set=es, rubric_version=rv, judge_config=judge, status=JudgeRun.Status.RUNNING)
    page = new_page()
    log_in(page, live_server.url, "lee")
    page.goto(f"{live_server.url}/judging/runs/{run.pk}/")
    expect(page.get_by_role("button", name="Cancel the run")).to_be_visible()
    JudgeRun.objects.filter(pk=run.pk).update(status=JudgeRun.Status.DONE, finished_at=timezone.now())
    page.wait_for_function("() => !document.querySelector('#run-progress').hasAttribute('hx-trigger')", timeout=15_000)
    expect(page.get_by_role("button", name="Cancel the run")).to_have_count(0)
    page.locator("#run-progress").get_by_role("link", name="Calibration report").click()
    expect(page.locator("#decision")).to_be_visible()


def test_a_lead_uses_the_admin_for_judge_configs_and_annotator_accounts(live_server, new_page):
    lee = make_user("lee", Role.LEAD)
    lee.is_staff = True
    lee.save()
    sync_role_group(lee)
    ann = make_user("ann", Role.ANNOTATOR)
    judge = make_judge(
        "draft-judge",
        backend=JudgeConfig.Backend.INSTRUMENT,
        instruments={"concise": {"kind": "max_length", "max_chars": 600}},
    )
    page = new_page()
    log_in(page, live_server.url, "lee")
    page.get_by_role("link", name="Admin").click()
    page.get_by_role("link", name="Judge configs").click()
    page.get_by_role("link", name="draft-judge").click()
    page.get_by_label("Max retries").fill("2")
    page.get_by_role("button", name="Save", exact=True).click()
    expect(page.get_by_text("was changed successfully")).to_be_visible()
    assert JudgeConfig.objects.get(pk=judge.pk).max_retries == 2
    page.goto(live_server.url + "/admin/evals/user/")
    page.get_by_role("link", name="ann", exact=True).click()
    expect(page.get_by_label("Superuser status")).to_have_count(0)  # read-only for a lead
    expect(page.get_by_label("Active")).to_be_visible()  # the account itself is the lead's to change
    # Roles are per workspace now: not on the account's admin page, but on the workspace's Members page.
    expect(page.get_by_label("Role")).to_have_count(0)
    page.goto(live_server.url + "/members/")
    page.get_by_label("Role of ann").select_option("reviewer")
    page.locator("form", has=page.get_by_label("Role of ann")).get_by_role("button", name="Change role").click()
    expect(page.get_by_text("ann is now a reviewer here.")).to_be_visible()
    ann.forget_workspace_roles()
    assert ann.role_in(default_workspace()) == Role.REVIEWER
