"""The labeling keyboard as a newcomer meets it (issue 25): Home's Next has the focus, p/f replace an existing
quote, a refused quote keeps the cursor, one place says why Submit was refused, and a whole case labeled by
keyboard and mouse (a resized evidence box included) shows no Content-Security-Policy error."""

from __future__ import annotations

import pytest
from playwright.sync_api import expect

from labeling.models import Annotation, Label

from ..factories import labeling_setup, make_user
from .browser_helpers import screenshot
from .test_labeling_browser import FOUR, criterion, keys_ready, wait_saved

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

LAPTOP = {"width": 1366, "height": 768}


def log_in(page, base_url: str, username: str) -> None:
    # The live server's first page (templates compiled, static files found) can take longer than the pages'
    # 15 s on a busy machine: the sign-in page, the first one opened, gets a minute.
    page.goto(base_url + "/accounts/login/", timeout=60_000)
    page.get_by_label("Username").fill(username)
    page.get_by_label("Password").fill("pw-for-tests-1")
    page.get_by_role("button", name="Log in").click()
    expect(page.get_by_role("heading", name="Icewater")).to_be_visible()


def open_case(live_server, new_page, name: str):
    labeling_setup(n_outputs=2, criteria=FOUR)
    make_user(name)
    page = new_page(**LAPTOP)
    log_in(page, live_server.url, name)
    page.get_by_role("button", name="Next").click()
    keys_ready(page)
    return page


def evidence(page, key: str):
    return criterion(page, key).get_by_label(f"Evidence for {key}")


def test_home_puts_the_focus_on_next_so_enter_starts_labeling(live_server, new_page):
    labeling_setup(n_outputs=1, criteria=FOUR)
    make_user("hana")
    page = new_page(**LAPTOP)
    log_in(page, live_server.url, "hana")
    expect(page.get_by_role("button", name="Next")).to_be_focused()
    page.keyboard.press("Enter")  # no Tab first
    expect(page.get_by_role("heading", name="case-001")).to_be_visible()
    # Back on Home with the case open, its Continue link has the focus instead.
    page.goto(live_server.url + "/")
    expect(page.get_by_role("link", name="Continue case-001")).to_be_focused()


def test_p_or_f_on_a_criterion_with_a_quote_selects_it_so_typing_replaces_it(live_server, new_page):
    page = open_case(live_server, new_page, "pia")
    page.keyboard.press("p")
    page.keyboard.type("refund of $40.00")
    page.keyboard.press("Enter")
    wait_saved(page, "correct_amount")
    page.keyboard.press("k")  # back to correct_amount, which has a quote now
    page.keyboard.press("f")
    expect(evidence(page, "correct_amount")).to_be_focused()
    page.keyboard.type('"duplicate_charge": 40.0')
    expect(evidence(page, "correct_amount")).to_have_value('"duplicate_charge": 40.0')  # replaced, not appended
    page.keyboard.press("Enter")
    expect(evidence(page, "correct_amount")).to_have_attribute("data-saved", '"duplicate_charge": 40.0')
    label = Label.objects.get(criterion__key="correct_amount", is_current=True)
    assert (label.outcome, label.evidence) == ("FAIL", '"duplicate_charge": 40.0')
    # e still goes to the end of the quote, to go on writing it.
    page.keyboard.press("k")
    page.keyboard.press("e")
    page.keyboard.type("X")
    expect(evidence(page, "correct_amount")).to_have_value('"duplicate_charge": 40.0X')


def test_enter_on_a_refused_quote_keeps_the_cursor_on_it_and_its_reason(live_server, new_page):
    page = open_case(live_server, new_page, "rae")
    page.keyboard.press("f")
    page.keyboard.type("a refund of $45.00")
    page.keyboard.press("Enter")  # saved and moved on; the server refuses the quote
    alert = page.locator("#status-correct_amount[role=alert]")
    expect(alert).to_contain_text("not in the transcript")
    # The cursor came back to the refused quote: the reason is not left behind.
    expect(evidence(page, "correct_amount")).to_be_focused()
    expect(page.locator("form.criterion.current")).to_have_attribute("data-key", "correct_amount")
    # Enter again on the unchanged refused quote stays put.
    page.keyboard.press("Enter")
    expect(evidence(page, "correct_amount")).to_be_focused()
    expect(alert).to_be_in_viewport()
    # Negative control: a quote that is in the transcript moves on with Enter, as before.
    page.keyboard.press("Control+a")
    page.keyboard.type("refund of $40.00")
    page.keyboard.press("Enter")
    wait_saved(page, "correct_amount")
    expect(page.locator("form.criterion.current")).to_have_attribute("data-key", "grounded")


def test_a_submit_with_criteria_left_lists_them_in_the_bar_and_posts_nothing(live_server, new_page):
    page = open_case(live_server, new_page, "sol")
    page.keyboard.press("n")  # correct_amount N/A; grounded, next_step and tone are left
    wait_saved(page, "correct_amount")
    requests = []
    page.on("request", lambda r: r.method == "POST" and r.url.endswith("/submit") and requests.append(r.url))
    page.keyboard.press("Control+Enter")
    problems = page.locator("#submit-problems li")
    expect(problems).to_have_count(3)
    expect(problems.nth(0)).to_contain_text("grounded: not answered yet")
    expect(page.locator("#submit-problems")).to_be_in_viewport()
    expect(page.locator("form.criterion.current")).to_have_attribute("data-key", "grounded")
    expect(page.locator("#submit-error")).to_have_count(0)  # no second, top-of-page banner
    screenshot(page, "keyboard_submit_refused_in_bar")
    assert requests == []
    assert Annotation.objects.filter(status="submitted").count() == 0


def test_a_refused_submit_without_script_is_said_in_the_same_bar(live_server, chromium):
    # The server's refusal (a page without JavaScript posts Submit as a plain form) lands in the sticky bar too.
    labeling_setup(n_outputs=1, criteria=FOUR)
    make_user("nos")
    context = chromium.new_context(viewport=LAPTOP, java_script_enabled=False)
    try:
        page = context.new_page()
        log_in(page, live_server.url, "nos")
        page.get_by_role("button", name="Next").click()
        page.get_by_role("button", name="Submit").click()
        expect(page.locator("#submit-problems")).to_contain_text("Not submitted. Still to fix:")
        expect(page.locator("#submit-problems li")).to_have_count(4)
        expect(page.locator("#submit-problems")).to_be_in_viewport()
        expect(page.locator("#submit-error")).to_have_count(0)
    finally:
        context.close()


HEIGHT = "(id) => document.getElementById(id).getBoundingClientRect().height"
CSP_WATCH = """document.addEventListener("securitypolicyviolation", (e) => {
  console.error(`Content Security Policy: ${e.violatedDirective} blocked ${e.blockedURI || "inline"}`);
});"""


def test_labeling_a_case_by_keyboard_and_mouse_shows_no_csp_error(live_server, chromium):
    labeling_setup(n_outputs=2, criteria=FOUR)
    make_user("cyd")
    context = chromium.new_context(viewport=LAPTOP)
    context.add_init_script(CSP_WATCH)
    errors = []
    try:
        page = context.new_page()
        page.on(
            "console", lambda m: m.type == "error" and "Content Security Policy" in m.text and errors.append(m.text)
        )
        log_in(page, live_server.url, "cyd")
        page.get_by_role("button", name="Next").click()
        keys_ready(page)
        # The person makes the first evidence box taller by its resize handle (a style attribute on it),
        # then saves: htmx used to copy that attribute onto the swapped-in form, which the policy refuses.
        box = evidence(page, "correct_amount").bounding_box()
        page.mouse.move(box["x"] + box["width"] - 3, box["y"] + box["height"] - 3)
        page.mouse.down()
        page.mouse.move(box["x"] + box["width"] - 3, box["y"] + box["height"] + 60, steps=4)
        page.mouse.up()
        assert evidence(page, "correct_amount").get_attribute("style")  # the negative control's condition holds
        taller = page.evaluate(HEIGHT, "ev-correct_amount")
        evidence(page, "correct_amount").click()
        page.keyboard.press("Escape")
        page.keyboard.press("p")
        page.keyboard.type("refund of $40.00")
        page.keyboard.press("Enter")
        expect(evidence(page, "correct_amount")).to_have_attribute("data-saved", "refund of $40.00")  # swapped in
        # The box the person resized keeps its size after the save (asserted below, after the policy's errors).
        height_after_save = page.evaluate(HEIGHT, "ev-correct_amount")
        page.keyboard.press("f")
        page.keyboard.type("not in the transcript at all")
        page.keyboard.press("Enter")
        expect(page.locator("#status-grounded[role=alert]")).to_be_visible()
        expect(evidence(page, "grounded")).to_be_focused()  # back on the refused quote
        page.keyboard.press("Control+a")
        page.keyboard.type("NONE")
        page.keyboard.press("Enter")
        page.keyboard.press("?")
        page.keyboard.press("Escape")
        page.keyboard.press("n")
        page.keyboard.press("c")
        wait_saved(page, "tone")
        page.keyboard.press("Control+Enter")
        expect(page.get_by_role("heading", name="case-002")).to_be_visible()
        page.goto(live_server.url + "/healthz")  # reports made on the last page have reached the test
    finally:
        context.close()
    assert errors == []
    assert height_after_save == taller
