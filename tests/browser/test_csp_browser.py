"""Every main page of every role works under the Content-Security-Policy: Chromium reports no violation.

The demo data (load_demo) gives each page something to show. A violation is caught twice: Chromium's
console error ("Refused to ...") and the page's securitypolicyviolation event, reported to the test
through a function exposed to every page of the context.
"""

from __future__ import annotations

import re
from io import StringIO

import pytest
from django.core.management import call_command
from playwright.sync_api import expect

from evals.models import EvalSet, User
from judging.models import JudgeConfig, JudgeRun, ProbeRun, Verdict
from labeling.models import LabelingQueue
from overview.management.commands.load_demo import DEFAULT_DEMO_PASSWORD, EVAL_SET, JUDGE

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def log_in(page, base: str, username: str, password: str = DEFAULT_DEMO_PASSWORD) -> None:
    page.goto(base + "/accounts/login/")
    page.get_by_label("Username").fill(username)
    page.get_by_label("Password").fill(password)
    page.get_by_role("button", name="Log in").click()
    expect(page.get_by_role("heading", name="Icewater")).to_be_visible()


def visit(page, base: str, path: str) -> None:
    response = page.goto(base + path)
    assert response is not None and response.status == 200, f"{path}: {response and response.status}"


def test_a_violation_on_a_page_is_seen_by_the_watch(live_server, watched):
    # The negative control: script the policy refuses is reported, so an empty list below means something.
    make, violations, _ = watched
    page = make()
    visit(page, live_server.url, "/accounts/login/")
    page.evaluate("() => { const s = document.createElement('script'); s.textContent = '1'; document.body.append(s); }")
    page.evaluate("() => document.body.setAttribute('style', 'color: red')")
    page.wait_for_function("() => window.icewaterViolationsSeen >= 2")
    page.goto(live_server.url + "/healthz")  # the reports made on the page have reached the test
    assert any("script-src" in v for v in violations), violations
    assert any("style-src" in v for v in violations), violations


def test_the_main_pages_of_every_role_show_no_policy_violation(live_server, watched):
    call_command("load_demo", verbosity=0, stdout=StringIO())
    base = live_server.url
    es = EvalSet.objects.get(name=EVAL_SET)
    rv = LabelingQueue.objects.get(eval_set=es, is_current=True).rubric_version
    judge = JudgeConfig.objects.get(name=JUDGE)
    run = JudgeRun.objects.filter(judge_config=judge, probe_run__isnull=True).latest("pk")
    probe_run = ProbeRun.objects.get(judge_config=judge)
    verdict = Verdict.objects.filter(run=run).first()
    report = f"/calibration/report/{es.pk}/{rv.pk}/{judge.pk}/"
    make, violations, errors = watched

    # Nobody signed in: the login page, and the lockout page after too many wrong passwords.
    page = make()
    visit(page, base, "/accounts/login/")
    for _ in range(5):
        page.get_by_label("Username").fill("nobody-at-all")
        page.get_by_label("Password").fill("wrong")
        page.get_by_role("button", name="Log in").click()
    expect(page.get_by_text("Too many wrong passwords")).to_be_visible()

    # The annotator: home, Next into a case, one answer saved through htmx, her work.
    page = make()
    log_in(page, base, "ana")
    page.get_by_role("button", name="Next").first.click()
    expect(page.locator("form.criterion.current")).to_have_count(1)  # labeling.js started
    page.keyboard.press("n")  # N/A on the first criterion: saved and swapped in by htmx
    expect(page.locator("form.criterion.answered")).to_have_count(1)
    visit(page, base, "/annotations/")

    # The reviewer: the adjudication queue, one adjudication, progress.
    page = make()
    log_in(page, base, "rita")
    visit(page, base, "/adjudication/")
    page.get_by_role("link", name="Adjudicate").first.click()
    expect(page.locator("form").first).to_be_visible()
    visit(page, base, "/progress/")

    # The lead: calibration (and its agent-version picker, which submits from static JS), judging,
    # imports, queues, the admin and its lockouts.
    page = make()
    log_in(page, base, "lee")
    for path in [
        "/calibration/",
        report,
        "/calibration/compare/",
        "/api/gates/",
        "/calibration/gates/run",
        "/judging/",
        f"/judging/runs/{run.pk}/",
        f"/judging/verdicts/{verdict.pk}/",
        f"/judging/configs/{judge.pk}/",
        "/judging/probes/",
        f"/judging/probes/{probe_run.pk}/",
        f"/judging/probes/{probe_run.pk}/padding/concise/?show=missed",
        "/import/",
        "/queues/",
        "/progress/",
        "/alerts/",
        "/admin/",
        "/admin/axes/accessattempt/",
    ]:
        visit(page, base, path)
    visit(page, base, report)
    version = page.locator("#agent_version option").nth(1).get_attribute("value")
    page.locator("#agent_version").select_option(version)
    expect(page).to_have_url(re.compile(r"agent_version="))
    visit(page, base, report)
    page.locator("svg.cmatrix a").first.click()  # a drilldown
    expect(page.get_by_role("heading").first).to_be_visible()

    # A superuser in the admin's own pages (its change lists and forms run the admin's JavaScript).
    root = User.objects.create_superuser("root-csp", password="pw-for-tests-1")
    page = make()
    log_in(page, base, "root-csp", "pw-for-tests-1")
    for path in ["/admin/evals/user/", f"/admin/evals/user/{root.pk}/change/", "/admin/evals/evalset/"]:
        visit(page, base, path)
    page.goto(base + "/healthz")  # the reports made on the last page have reached the test

    assert violations == []
    assert errors == []
