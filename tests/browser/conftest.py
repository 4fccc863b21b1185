"""Real Chromium through Playwright for Python, against pytest-django's live server.

Playwright's sync API runs an event loop in the test thread; Django refuses ORM calls from a
thread with a running loop unless told it is safe. Here it is: the loop only drives the browser,
and the test's ORM calls never run inside a coroutine. DJANGO_ALLOW_ASYNC_UNSAFE is set only
while a module's browser is open, so other tests keep Django's check.

Every fixture the browser tests share is here; plain helpers (finding Chromium, screenshots) are in
browser_helpers.py.
"""

from __future__ import annotations

import os

import pytest

from .browser_helpers import launch_chromium


@pytest.fixture(scope="module")
def chromium():
    # Module scope, not session: Playwright's sync API keeps an event loop running while it is open,
    # and another module starting its own sync_playwright() must not find ours still running.
    from playwright.sync_api import sync_playwright

    before = os.environ.get("DJANGO_ALLOW_ASYNC_UNSAFE")
    os.environ["DJANGO_ALLOW_ASYNC_UNSAFE"] = "true"
    try:
        with sync_playwright() as p:
            browser = launch_chromium(p)
            yield browser
            browser.close()
    finally:
        if before is None:
            os.environ.pop("DJANGO_ALLOW_ASYNC_UNSAFE", None)
        else:
            os.environ["DJANGO_ALLOW_ASYNC_UNSAFE"] = before


@pytest.fixture
def new_page(chromium):
    """Pages with their own cookies (one per person), closed after the test; JS errors fail the test."""
    contexts, errors = [], []

    def make(width: int = 1400, height: int = 950):
        context = chromium.new_context(viewport={"width": width, "height": height})
        context.set_default_timeout(15_000)
        contexts.append(context)
        page = context.new_page()
        page.on("pageerror", lambda exc: errors.append(str(exc)))
        return page

    yield make
    for context in contexts:
        context.close()
    assert not errors, f"JavaScript errors on the page: {errors}"


REPORT_VIOLATIONS = """
window.icewaterViolationsSeen = 0;
document.addEventListener("securitypolicyviolation", (e) => {
  window.icewaterViolationsSeen += 1;
  window.icewaterCspViolation(`${e.violatedDirective} blocked ${e.blockedURI || "inline"} on ${location.pathname}`);
});
"""


@pytest.fixture
def watched(chromium):
    """A function making a page whose CSP violations and JavaScript errors land in the returned lists."""
    contexts, violations, errors = [], [], []

    def record(text: str) -> None:
        violations.append(text)

    def make():
        context = chromium.new_context(viewport={"width": 1400, "height": 950})
        context.set_default_timeout(15_000)
        context.expose_function("icewaterCspViolation", record)
        context.add_init_script(REPORT_VIOLATIONS)
        contexts.append(context)
        page = context.new_page()
        page.on(
            "console", lambda m: m.type == "error" and "Content Security Policy" in m.text and violations.append(m.text)
        )
        page.on("pageerror", lambda exc: errors.append(str(exc)))
        return page

    yield make, violations, errors
    for context in contexts:
        context.close()
