"""In Chromium: the token shown once, and the command beside it, are copied with one click each."""

from __future__ import annotations

import pytest
from playwright.sync_api import expect

from evals.models import Role

from ..factories import make_rubric_version, make_user
from .browser_helpers import screenshot
from .test_labeling_browser import log_in

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def test_the_new_token_and_its_command_are_copied_to_the_clipboard(live_server, new_page):
    make_rubric_version("refund", "1")
    make_user("lee", Role.LEAD)
    page = new_page(1366, 768)
    page.context.grant_permissions(["clipboard-read", "clipboard-write"], origin=live_server.url)
    log_in(page, live_server.url, "lee")
    page.goto(live_server.url + "/api/gates/")
    form = page.locator("form[hx-post]")
    form.get_by_label("Project").fill("checkout")
    form.get_by_label("Rubric version").select_option(label="refund@1")
    form.get_by_label("Eval sets").fill("rc-*")
    form.get_by_role("button", name="Create token").click()  # htmx swaps the panel: the script still applies
    secret = page.locator("#new-token").inner_text().strip()
    assert secret.startswith("icw_")
    page.get_by_role("button", name="Copy token").click()
    expect(page.locator(".copy-status").first).to_have_text("Copied.")
    assert page.evaluate("navigator.clipboard.readText()") == secret
    page.get_by_role("button", name="Copy command").first.click()
    copied = page.evaluate("navigator.clipboard.readText()")
    assert copied.startswith(f"curl -X POST {live_server.url}/api/gate") and f"Bearer {secret}" in copied
    screenshot(page, "gate_token_copied")
