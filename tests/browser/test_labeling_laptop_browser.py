"""The labeling page on a 1366x768 laptop: the evidence box clear of the Submit bar, the keys one key away,
and a refused Submit that lists what is left and keeps the cursor where the quote was refused."""

from __future__ import annotations

import pytest
from playwright.sync_api import expect

from labeling.models import Annotation

from ..factories import labeling_setup, make_user
from .browser_helpers import screenshot
from .test_labeling_browser import criterion, keys_ready, log_in, wait_saved

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

LAPTOP = {"width": 1366, "height": 768}
# Six criteria with definitions and examples as long as a real rubric's: the column is taller than the screen.
LONG = "The reply states the figure the tools returned, to the cent, and nothing else that could be read as an amount. "
SIX = [
    {"key": key, "definition": LONG * 2, "pass_example": "Refund $40.00.", "fail_example": "Refund $45.00."}
    for key in ("correct_amount", "grounded", "within_policy", "next_step", "concise", "tone")
]

# Where the focused evidence box is against the sticky Submit bar and the window.
CLEAR_OF_BAR = """() => {
  const ev = document.activeElement, bar = document.getElementById("submit-form");
  if (!ev || ev.name !== "evidence" || !bar) return false;
  const box = ev.getBoundingClientRect(), barTop = bar.getBoundingClientRect().top;
  return box.top >= 0 && box.bottom <= barTop && barTop < window.innerHeight;
}"""


def open_case(live_server, new_page, name: str, criteria=SIX):
    labeling_setup(n_outputs=1, criteria=criteria)
    make_user(name)
    page = new_page(**LAPTOP)
    log_in(page, live_server.url, name)
    page.get_by_role("button", name="Next").click()
    keys_ready(page)
    return page


def test_on_a_laptop_the_focused_evidence_box_is_never_under_the_submit_bar(live_server, new_page):
    page = open_case(live_server, new_page, "lap")
    assert page.evaluate("() => document.documentElement.scrollHeight > window.innerHeight")  # the page scrolls
    for key in [c["key"] for c in SIX]:
        page.keyboard.press("p")  # PASS: the cursor goes to this criterion's evidence box
        expect(criterion(page, key).get_by_label(f"Evidence for {key}")).to_be_focused()
        page.wait_for_function(CLEAR_OF_BAR)
        page.keyboard.type("NONE")
        page.keyboard.press("Enter")
        wait_saved(page, key)
    screenshot(page, "labeling_laptop_last_criterion")
    # Tabbing back into an evidence box lower down keeps it clear of the bar as well.
    page.evaluate("() => window.scrollTo(0, 0)")
    criterion(page, "tone").get_by_label("Evidence for tone").focus()
    page.wait_for_function(CLEAR_OF_BAR)


def test_the_keys_open_with_a_question_mark_without_scrolling(live_server, new_page):
    page = open_case(live_server, new_page, "kee")
    help_box = page.locator("#keys")
    expect(help_box).to_be_hidden()
    before = page.evaluate("() => window.scrollY")
    page.keyboard.press("?")
    expect(page.get_by_role("heading", name="Keyboard")).to_be_visible()
    box = help_box.bounding_box()
    assert box["y"] >= 0 and box["y"] + box["height"] <= LAPTOP["height"]  # all of it on the screen
    assert page.evaluate("() => window.scrollY") == before
    screenshot(page, "labeling_laptop_keys")
    page.keyboard.press("Escape")
    expect(help_box).to_be_hidden()
    page.get_by_role("button", name="Keys").click()  # the same from the page head, for the mouse
    expect(help_box).to_be_visible()
    page.keyboard.press("?")
    expect(help_box).to_be_hidden()
    # The keys still work afterwards: p picks PASS on the current criterion.
    page.keyboard.press("p")
    expect(criterion(page, "correct_amount").get_by_label("Evidence for correct_amount")).to_be_focused()


def test_a_refused_submit_lists_what_is_left_and_stays_on_the_refused_quote(live_server, new_page):
    page = open_case(live_server, new_page, "ref", criteria=SIX[:4])
    # correct_amount: FAIL with a quote that is not in the transcript (refused on the page).
    page.keyboard.press("f")
    page.keyboard.type("a refund of $45.00")
    page.keyboard.press("Enter")
    expect(page.locator("#status-correct_amount[role=alert]")).to_contain_text("not in the transcript")
    # grounded: PASS, no quote yet; within_policy: N/A (complete); next_step: untouched.
    criterion(page, "grounded").get_by_label("PASS", exact=True).check()
    wait_saved(page, "grounded")
    criterion(page, "within_policy").get_by_label("N/A").check()
    wait_saved(page, "within_policy")
    criterion(page, "correct_amount").get_by_label("Evidence for correct_amount").click()
    page.keyboard.press("Control+Enter")

    problems = page.locator("#submit-problems li")
    expect(problems).to_have_count(3)  # all at once, and only what is left
    expect(problems.nth(0)).to_contain_text("correct_amount")
    expect(problems.nth(0)).to_contain_text("not in the transcript")
    expect(problems.nth(1)).to_contain_text("grounded: needs an evidence quote")
    expect(problems.nth(2)).to_contain_text("next_step: not answered")
    expect(page.locator("#submit-problems")).not_to_contain_text("within_policy")
    # The cursor stayed on the refused quote, ready to fix it.
    evidence = criterion(page, "correct_amount").get_by_label("Evidence for correct_amount")
    expect(evidence).to_be_focused()
    expect(evidence).to_have_value("a refund of $45.00")
    page.wait_for_function(CLEAR_OF_BAR)  # the bar grew with the list; the box is still clear of it
    expect(page.locator("#submit-problems")).to_be_in_viewport()
    screenshot(page, "labeling_laptop_refused_submit")
    assert Annotation.objects.get().status == "draft"


def test_on_a_laptop_the_response_is_in_view_before_the_tool_calls(live_server, new_page):
    from evals.models import Output

    labeling_setup(n_outputs=1, criteria=SIX)
    result = {"order": "A9851", "items": [{"sku": f"SKU-{i}", "price": 10.0 + i} for i in range(12)]}
    calls = [{"name": f"tool_{i}", "args": {"order_id": "A9851"}, "response": result} for i in range(1, 5)]
    Output.objects.update(tool_calls=calls)  # four long results: above the response they would fill the screen
    make_user("lap")
    page = new_page(**LAPTOP)
    log_in(page, live_server.url, "lap")
    page.get_by_role("button", name="Next").click()
    keys_ready(page)
    response = page.locator("[data-part=response]")
    box = response.bounding_box()
    assert box is not None and box["y"] + box["height"] <= LAPTOP["height"]  # all of it, without scrolling
    parts = page.eval_on_selector_all("#transcript [data-part]", "els => els.map(e => e.dataset.part)")
    assert parts == ["input", "response", "reference", "tool", "tool", "tool", "tool"]
    expect(page.locator(".tool-calls-head")).to_contain_text("4, in the order the agent made them")
    screenshot(page, "labeling_laptop_response_first")
