"""The run page in real Chromium: the htmx progress panel updates while the run works and stops polling at the end."""

from __future__ import annotations

import time

import pytest
from django.db import connection
from django.test import Client
from django.urls import reverse

from judging.models import JudgeRun, RunItem, Verdict
from tests.factories import make_eval_set, make_llm_judge, make_output, make_rubric_version, make_user

from .browser_helpers import launch_chromium

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]
# Two polls at "every 2s" plus slack: long enough to see a poll that should not happen.
QUIET_S = 5


@pytest.fixture
def browser_page(monkeypatch):
    from playwright.sync_api import sync_playwright

    # Playwright's sync API keeps an event loop in this thread; the ORM calls here are plain blocking ones.
    monkeypatch.setenv("DJANGO_ALLOW_ASYNC_UNSAFE", "true")
    with sync_playwright() as p:
        browser = launch_chromium(p)
        try:
            yield browser.new_context().new_page()
        finally:
            browser.close()
            # ORM calls made while Playwright runs get their own connection (another context): close it,
            # or the test database cannot be dropped at the end of the session.
            connection.close()


def test_the_progress_panel_follows_the_run_and_stops_polling_when_it_ends(live_server, browser_page):
    lead = make_user("lead-b", "lead")
    eval_set = make_eval_set("support")
    rv = make_rubric_version(name="refund", version="1")
    judge = make_llm_judge(name="inst", backend="instrument", instruments={"x": {"kind": "max_length", "max_chars": 9}})
    outputs = [make_output(eval_set, case_id=f"c{i}") for i in range(2)]
    run = JudgeRun.objects.create(
        eval_set=eval_set, rubric_version=rv, judge_config=judge, status="running", total_items=2, expected_verdicts=4
    )
    for output in outputs:
        RunItem.objects.create(run=run, output=output, state="pending")
    client = Client()
    client.force_login(lead)
    page = browser_page
    page.context.add_cookies(
        [{"name": "sessionid", "value": client.cookies["sessionid"].value, "url": live_server.url}]
    )
    polls: list[str] = []
    page.on("request", lambda request: polls.append(request.url) if request.url.endswith("/progress") else None)
    page.goto(live_server.url + reverse("judging:run", args=[run.pk]))
    panel = page.locator("#run-progress")
    assert "0 of 2 items" in panel.inner_text()

    # The run finishes while the page is open: the next poll shows it, and it is the last.
    criteria = list(rv.criteria.all())
    for output in outputs:
        for criterion in criteria:
            Verdict.objects.create(
                run=run,
                output=output,
                rubric_version=rv,
                criterion=criterion,
                judge_config=judge,
                judge_config_hash=judge.content_hash,
                outcome="PASS",
            )
    RunItem.objects.filter(run=run).update(state="done")
    JudgeRun.objects.filter(pk=run.pk).update(status="done")
    # A function, not an expression string: Playwright evaluates a string with eval, which the page's
    # Content-Security-Policy refuses.
    page.wait_for_function(
        "() => document.querySelector('#run-progress').innerText.includes('2 of 2 items')", timeout=15_000
    )
    assert "4 of 4 verdicts" in panel.inner_text()
    assert panel.get_attribute("hx-trigger") is None
    seen = len(polls)
    time.sleep(QUIET_S)
    assert len(polls) == seen  # the 286 answer stopped the polling
