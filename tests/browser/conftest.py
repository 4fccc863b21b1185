"""Real Chromium through Playwright for Python, against pytest-django's live server.

Playwright's sync API runs an event loop in the test thread; Django refuses ORM calls from a
thread with a running loop unless told it is safe. Here it is: the loop only drives the browser,
and the test's ORM calls never run inside a coroutine. DJANGO_ALLOW_ASYNC_UNSAFE is set only
while a module's browser is open, so other tests keep Django's check.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

CHROMIUM = "/usr/bin/chromium"
CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-background-networking",
    "--disable-component-update",
    "--no-first-run",
]
SCREENS = Path(os.environ.get("ICEWATER_SCREENS_DIR", "/tmp/screens"))


@pytest.fixture(scope="module")
def chromium():
    # Module scope, not session: Playwright's sync API keeps an event loop running while it is open,
    # and another module starting its own sync_playwright() must not find ours still running.
    from playwright.sync_api import sync_playwright

    before = os.environ.get("DJANGO_ALLOW_ASYNC_UNSAFE")
    os.environ["DJANGO_ALLOW_ASYNC_UNSAFE"] = "true"
    try:
        with sync_playwright() as p:
            browser = p.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS, headless=True)
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


def screenshot(page, name: str) -> None:
    SCREENS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(SCREENS / f"{name}.png"), full_page=False)
