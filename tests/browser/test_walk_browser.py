"""The newcomer's walk on a laptop: every page each role meets, on the demo, fits 1366x768 without sideways
scrolling; at 1920x1080 no table sticks out of its card.

The demo (load_demo, about 13 s) is loaded once for the module, with a live server of the module's own: the
pytest-django `live_server` fixture would make each test transactional, and the flush after the first test
would take the demo with it. The database is flushed when the module ends, as a transactional test leaves it.
"""

from __future__ import annotations

import re

import pytest
from django.db import connections
from playwright.sync_api import expect
from pytest_django.live_server_helper import LiveServer

from evals.models import Output
from judging.models import JudgeRun, ProbeRun, Verdict
from overview.management.commands.load_demo import DEFAULT_DEMO_PASSWORD

from .browser_helpers import screenshot

# django_db (not transactional): pytest-django makes the test database only for tests that carry the mark; the
# tests themselves write nothing (the live server does, on its own connection, and the module's flush clears it).
pytestmark = [pytest.mark.browser, pytest.mark.django_db]

# How far the page reaches to the right of the window (0: no sideways scroll), and the tables wider than
# the card they sit in (a scroll box of their own, .table-scroll, counts as their card).
OVERFLOW = "() => document.documentElement.scrollWidth - document.documentElement.clientWidth"
TABLES_OUT = """() => Array.from(document.querySelectorAll("table")).filter((t) => {
  const box = t.closest(".table-scroll, .card");
  return box && t.getBoundingClientRect().right > box.getBoundingClientRect().right + 1;
}).map((t) => t.id || t.className || "table")"""


@pytest.fixture(scope="module")
def demo_site(module_demo, django_db_blocker):
    """A live server on the demo for the whole module; ids of what the walk opens."""
    es, rv, judge = module_demo
    with django_db_blocker.unblock():
        run = JudgeRun.objects.filter(judge_config=judge, probe_run__isnull=True).latest("pk")
        ids = {
            "es": es.pk,
            "rv": rv.pk,
            "judge": judge.pk,
            "run": run.pk,
            "probe_run": ProbeRun.objects.get(judge_config=judge).pk,
            "verdict": Verdict.objects.filter(run=run).first().pk,
            "output": Output.objects.filter(case__eval_set=es).order_by("pk").first().pk,
        }
        # The server's threads close their connection after each request (as CONN_MAX_AGE=0 does in production
        # without persistent connections): a thread the browser keeps alive must not keep a session open on the
        # test database, which could then not be dropped at the end of the run.
        settings_dict = connections["default"].settings_dict
        max_age, settings_dict["CONN_MAX_AGE"] = settings_dict["CONN_MAX_AGE"], 0
        server = LiveServer("localhost")
        try:
            yield server.url, ids
        finally:
            server.stop()
            settings_dict["CONN_MAX_AGE"] = max_age


def walk(ids: dict) -> dict[str, list[str]]:
    """Each role's pages, in the order the README walk meets them. NEXT, ADJUDICATE and GATE are reached by
    the page's own button or link (a labeling case, an adjudication item, a gate result have no fixed address)."""
    report = f"/calibration/report/{ids['es']}/{ids['rv']}/{ids['judge']}/"
    return {
        "ana": ["/", "NEXT", "/annotations/"],
        "rita": ["/", "/adjudication/", "ADJUDICATE", "/progress/"],
        "lee": [
            "/",
            "/calibration/",
            report,
            report + "correct_amount/false-pass/",
            report + "concise/false-fail/",
            "/calibration/compare/",
            "/api/gates/",
            "/calibration/gates/run",
            "GATE",
            "/judging/",
            f"/judging/configs/{ids['judge']}/",
            "/judging/configs/new",
            f"/judging/runs/{ids['run']}/",
            f"/judging/verdicts/{ids['verdict']}/",
            "/judging/probes/",
            f"/judging/probes/{ids['probe_run']}/",
            f"/judging/probes/{ids['probe_run']}/padding/concise/?show=missed",
            "/import/",
            "/queues/",
            f"/rubrics/{ids['rv']}/",
            f"/rubrics/{ids['rv']}/new",
            f"/sets/{ids['es']}/",
            f"/outputs/{ids['output']}/",
            "/progress/",
            "/adjudication/",
        ],
    }


def log_in(page, base: str, username: str) -> None:
    page.goto(base + "/accounts/login/")
    page.get_by_label("Username").fill(username)
    page.get_by_label("Password").fill(DEFAULT_DEMO_PASSWORD)
    page.get_by_role("button", name="Log in").click()
    expect(page.get_by_role("heading", name="Icewater")).to_be_visible()


def open_step(page, base: str, step: str) -> None:
    if step == "NEXT":
        page.goto(base + "/")
        page.locator("main .next-card .primary").first.click()
        expect(page.locator("form.criterion.current")).to_have_count(1)
    elif step == "ADJUDICATE":
        page.goto(base + "/adjudication/")
        page.get_by_role("link", name="Start with the first").click()
        expect(page.locator("form.gold-form")).to_be_visible()
    elif step == "GATE":
        page.goto(base + "/calibration/gates/run")
        page.locator("form button.primary").first.click()
        expect(page).to_have_url(re.compile(r"/calibration/gates/\d+/$"))
    else:
        response = page.goto(base + step)
        assert response is not None and response.status == 200, f"{step}: {response and response.status}"


def measure_walk(chromium, base: str, ids: dict, width: int, height: int, check: str, roles=None) -> list[str]:
    """Visit every page of the walk at this size; the pages where `check` finds something, with what it found."""
    found = []
    for username, steps in walk(ids).items():
        if roles and username not in roles:
            continue
        context = chromium.new_context(viewport={"width": width, "height": height})
        context.set_default_timeout(15_000)
        try:
            page = context.new_page()
            log_in(page, base, username)
            for step in steps:
                open_step(page, base, step)
                result = page.evaluate(check)
                path = page.url.removeprefix(base)
                screenshot(page, f"walk-{width}-{username}-{path.strip('/').replace('/', '_') or 'home'}")
                if result:
                    found.append(f"{username} {path}: {result}")
        finally:
            context.close()
    return found


def test_the_check_sees_a_page_that_scrolls_sideways_and_a_table_out_of_its_card(demo_site, chromium):
    # The negative control: the same checks on a page made too wide, and on a table made wider than its card.
    base, _ = demo_site
    context = chromium.new_context(viewport={"width": 1366, "height": 768})
    try:
        page = context.new_page()
        log_in(page, base, "lee")
        assert page.evaluate(OVERFLOW) == 0
        page.evaluate(
            "() => { const d = document.createElement('div'); d.className = 'card'; "
            "d.innerHTML = '<table><tr><td>x</td></tr></table>'; document.querySelector('main').append(d); }"
        )
        assert page.evaluate(TABLES_OUT) == []
        page.evaluate("() => { document.querySelector('main .card:last-child table').style.width = '3000px'; }")
        assert page.evaluate(TABLES_OUT) != []
        assert page.evaluate(OVERFLOW) > 1000
    finally:
        context.close()


def test_every_page_of_the_walk_fits_a_laptop_screen_without_sideways_scrolling(demo_site, chromium):
    base, ids = demo_site
    assert measure_walk(chromium, base, ids, 1366, 768, OVERFLOW) == []


def test_on_a_wide_screen_no_table_sticks_out_of_its_card(demo_site, chromium):
    # The lead's pages: the wide tables (criteria, probes, verdicts, gates) are theirs.
    base, ids = demo_site
    assert measure_walk(chromium, base, ids, 1920, 1080, TABLES_OUT, roles=("lee",)) == []
