"""Labeling and adjudication in real Chromium: the keyboard flow, quotes checked on the page, and gold in the export."""

from __future__ import annotations

import json
import re
from io import StringIO

import pytest
from django.core.management import call_command
from playwright.sync_api import expect

from labeling.models import Annotation, GoldLabel, Label

from ..factories import labeling_setup, make_user
from .browser_helpers import screenshot

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

FOUR = [
    {"key": "correct_amount", "definition": "The refund amount matches the reference."},
    {"key": "grounded", "definition": "Every claim appears in a tool result."},
    {"key": "next_step", "definition": "The customer is told what happens next."},
    {"key": "tone", "definition": "Polite and calm."},
]


def log_in(page, base_url: str, username: str) -> None:
    page.goto(base_url + "/accounts/login/")
    page.get_by_label("Username").fill(username)
    page.get_by_label("Password").fill("pw-for-tests-1")
    page.get_by_role("button", name="Log in").click()
    expect(page.get_by_role("heading", name="Icewater")).to_be_visible()


def criterion(page, key: str):
    return page.locator("fieldset", has=page.locator("legend", has_text=key))


def tab_to(page, name: str, limit: int = 40) -> None:
    """Press Tab until the element named `name` has the focus: the keyboard is the only input."""
    for _ in range(limit):
        page.keyboard.press("Tab")
        if page.evaluate("() => (document.activeElement.innerText || '').trim()") == name:
            return
    raise AssertionError(f"Tab never reached {name!r}")


def keys_ready(page) -> None:
    """labeling.js has started (it marks the current criterion): keys pressed now are not lost."""
    expect(page.locator("form.criterion.current")).to_have_count(1)


def wait_saved(page, key: str) -> None:
    expect(page.locator(f"#status-{key}")).to_contain_text("Saved")


def test_an_annotator_labels_a_whole_case_with_the_keyboard_only(live_server, new_page):
    eval_set, rv, outputs = labeling_setup(n_outputs=2, criteria=FOUR)
    make_user("kim")
    page = new_page()
    page.goto(live_server.url + "/accounts/login/")
    page.keyboard.type("kim")
    page.keyboard.press("Tab")
    page.keyboard.type("pw-for-tests-1")
    page.keyboard.press("Enter")
    expect(page.get_by_role("heading", name="Icewater")).to_be_visible()
    tab_to(page, "Next")
    page.keyboard.press("Enter")
    expect(page.get_by_role("heading", name="case-001")).to_be_visible()
    keys_ready(page)
    page.keyboard.press("?")  # the keys are documented on the page, one key away
    expect(page.get_by_role("heading", name="Keyboard")).to_be_visible()
    page.keyboard.press("Escape")
    expect(page.get_by_role("heading", name="Keyboard")).to_be_hidden()

    # 1 correct_amount: PASS, the cursor lands in the evidence box, Enter saves and moves on.
    page.keyboard.press("p")
    expect(criterion(page, "correct_amount").get_by_label("Evidence for correct_amount")).to_be_focused()
    page.keyboard.type("refund of $40.00")
    page.keyboard.press("Enter")
    wait_saved(page, "correct_amount")
    # 2 grounded: FAIL with an explicit NONE.
    page.keyboard.press("f")
    page.keyboard.type("NONE")
    page.keyboard.press("Enter")
    # 3 next_step: N/A moves on by itself; 4 tone: Can't tell.
    page.keyboard.press("n")
    page.keyboard.press("c")
    wait_saved(page, "tone")
    # Back up with k and change grounded's evidence with e (Esc saves and leaves the box).
    page.keyboard.press("k")
    page.keyboard.press("k")
    page.keyboard.press("e")
    page.keyboard.press("Control+a")
    page.keyboard.type('"duplicate_charge": 40.0')
    page.keyboard.press("Escape")
    expect(page.locator("#status-grounded")).to_contain_text("the quote is in the transcript")
    # The current criterion's quote is marked where it is in the transcript.
    expect(page.locator("#transcript mark.mine")).to_have_text('"duplicate_charge": 40.0')
    screenshot(page, "labeling_page")
    page.keyboard.press("j")
    expect(page.locator("#transcript mark.mine")).to_have_count(0)  # next_step has no quote
    expect(criterion(page, "next_step").get_by_label("N/A")).to_be_checked()
    expect(criterion(page, "tone").get_by_label("Can't tell")).to_be_checked()

    # The draft survives a reload.
    page.reload()
    keys_ready(page)
    expect(criterion(page, "correct_amount").get_by_label("PASS", exact=True)).to_be_checked()
    expect(criterion(page, "grounded").get_by_label("Evidence for grounded")).to_have_value('"duplicate_charge": 40.0')

    page.keyboard.press("Control+Enter")
    expect(page.get_by_role("heading", name="case-002")).to_be_visible()
    expect(page.get_by_text("Submitted case-001.")).to_be_visible()

    annotation = Annotation.objects.get(annotator__username="kim", output=outputs[0])
    assert annotation.status == "submitted"
    got = {lab.criterion.key: (lab.outcome, lab.evidence) for lab in Label.objects.filter(annotation=annotation)}
    assert got == {
        "correct_amount": ("PASS", "refund of $40.00"),
        "grounded": ("FAIL", '"duplicate_charge": 40.0'),
        "next_step": ("NOT_APPLICABLE", ""),
        "tone": ("ABSTAIN", ""),
    }


def test_a_quote_that_is_not_in_the_transcript_is_refused_on_the_page(live_server, new_page):
    eval_set, rv, outputs = labeling_setup(n_outputs=1)
    make_user("lou")
    page = new_page()
    log_in(page, live_server.url, "lou")
    page.get_by_role("button", name="Next").click()
    amount = criterion(page, "correct_amount")
    amount.get_by_label("FAIL", exact=True).check()
    wait_saved(page, "correct_amount")
    evidence = amount.get_by_label("Evidence for correct_amount")
    evidence.fill("a refund of $45.00")
    evidence.press("Enter")
    alert = page.locator("#status-correct_amount[role=alert]")
    expect(alert).to_contain_text("This quote is not in the transcript")
    expect(evidence).to_have_value("a refund of $45.00")  # kept on the page to fix, not lost
    assert not Label.objects.filter(evidence__contains="$45.00").exists()
    screenshot(page, "labeling_quote_refused")

    # Selecting text in the transcript quotes it into the current criterion, and that one is accepted.
    evidence.click()  # back to correct_amount (Enter had moved on to the next criterion)
    response = page.locator("[data-part=response] pre")
    box = response.bounding_box()
    text = response.inner_text()
    assert text.startswith("I have issued a refund")
    page.mouse.move(box["x"] + 2, box["y"] + 8)
    page.mouse.down()
    page.mouse.move(box["x"] + box["width"] * 0.45, box["y"] + 8, steps=8)
    page.mouse.up()
    expect(page.locator("#status-correct_amount")).to_contain_text("the quote is in the transcript")
    quoted = evidence.input_value()
    assert quoted and quoted in text
    assert Label.objects.get(criterion__key="correct_amount").evidence == quoted

    # Submitting with an unanswered criterion explains what is missing, in the sticky Submit bar.
    page.get_by_role("button", name="Submit").click()
    expect(page.locator("#submit-problems")).to_contain_text("next_step: not answered yet")
    assert Annotation.objects.get().status == "draft"


def label_case(page, answers: dict[str, tuple[str, str]]) -> None:
    page.get_by_role("button", name="Next").click()
    for key, (outcome, evidence) in answers.items():
        box = criterion(page, key)
        box.get_by_label(outcome, exact=True).check()
        box.get_by_label(f"Evidence for {key}").fill(evidence)
        box.get_by_label(f"Evidence for {key}").press("Tab")
        expect(page.locator(f"#status-{key}")).to_contain_text("Saved")
    page.get_by_role("button", name="Submit").click()
    expect(page.get_by_text("Nothing left for you")).to_be_visible()


def test_two_annotators_disagree_a_reviewer_adjudicates_and_gold_is_exported(live_server, new_page):
    eval_set, rv, (output,) = labeling_setup(n_outputs=1)
    make_user("ada"), make_user("bo"), make_user("rex", "reviewer")
    first, second = new_page(), new_page()
    log_in(first, live_server.url, "ada")
    log_in(second, live_server.url, "bo")
    label_case(first, {"correct_amount": ("PASS", "refund of $40.00"), "next_step": ("PASS", "within 5 business days")})
    label_case(second, {"correct_amount": ("FAIL", '"duplicate_charge": 40.0'), "next_step": ("PASS", "NONE")})

    reviewer = new_page()
    log_in(reviewer, live_server.url, "rex")
    reviewer.get_by_role("link", name="Adjudicate").first.click()
    expect(reviewer.get_by_text("1 waiting")).to_be_visible()
    reviewer.get_by_role("link", name="Start with the first").click()
    expect(reviewer.get_by_role("heading", name=re.compile("correct_amount on case-001"))).to_be_visible()
    expect(reviewer.locator("mark.hl-a")).to_have_text("refund of $40.00")
    expect(reviewer.locator("mark.hl-b")).to_have_text('"duplicate_charge": 40.0')
    expect(reviewer.get_by_role("heading", name="Annotator A PASS")).to_be_visible()
    expect(reviewer.get_by_role("heading", name="Annotator B FAIL")).to_be_visible()
    body = reviewer.content()
    assert "ada" not in body and ">bo<" not in body
    screenshot(reviewer, "adjudication_page")
    reviewer.get_by_role("button", name="Save gold label").click()
    expect(reviewer.get_by_text("a rationale is required")).to_be_visible()
    reviewer.get_by_label("FAIL", exact=True).check()
    reviewer.get_by_label(re.compile("^Rationale")).fill("The tool result shows a 40.0 duplicate charge; FAIL.")
    reviewer.get_by_role("button", name="Save gold label").click()
    expect(reviewer.get_by_text("Gold for correct_amount on case-001: FAIL.")).to_be_visible()
    expect(reviewer.get_by_text("0 waiting")).to_be_visible()
    gold = GoldLabel.objects.get()
    assert (gold.outcome, gold.decided_by.username) == ("FAIL", "rex")

    reviewer.goto(live_server.url + f"/progress/?eval_set={eval_set.pk}&rubric_version={rv.pk}")
    expect(reviewer.get_by_role("heading", name="Per criterion")).to_be_visible()
    screenshot(reviewer, "progress_page")

    out = StringIO()
    call_command("export_data", "--eval-set", eval_set.name, "--what", "gold", "--rubric", rv.ref, stdout=out)
    rows = {r["criterion"]: r for r in map(json.loads, out.getvalue().splitlines())}
    assert rows["correct_amount"]["outcome"] == "FAIL"
    assert rows["correct_amount"]["adjudicator"] == "rex"
    assert rows["correct_amount"]["rationale"] == "The tool result shows a 40.0 duplicate charge; FAIL."
    assert rows["next_step"]["outcome"] == "PASS"  # agreed: gold without a reviewer
    out = StringIO()
    call_command("export_data", "--eval-set", eval_set.name, "--what", "labels", "--rubric", rv.ref, stdout=out)
    labels = [json.loads(line) for line in out.getvalue().splitlines()]
    assert {(r["annotator"], r["criterion"], r["outcome"]) for r in labels} == {
        ("ada", "correct_amount", "PASS"),
        ("ada", "next_step", "PASS"),
        ("bo", "correct_amount", "FAIL"),
        ("bo", "next_step", "PASS"),
    }


def test_a_submitted_annotation_is_corrected_as_a_new_revision(live_server, new_page):
    from ..factories import annotate_directly

    eval_set, rv, (output,) = labeling_setup(n_outputs=1)
    mia = make_user("mia")
    done = annotate_directly(
        output, rv, mia, {"correct_amount": ("PASS", "refund of $40.00"), "next_step": ("PASS", "NONE")}
    )
    page = new_page()
    log_in(page, live_server.url, "mia")
    page.goto(live_server.url + f"/annotations/{done.pk}/")
    expect(criterion(page, "correct_amount").get_by_label("FAIL", exact=True)).to_be_disabled()
    page.get_by_role("link", name="Correct an answer").click()
    expect(page.get_by_role("button", name="Save correction").first).to_be_visible()
    keys_ready(page)
    page.keyboard.press("1")
    page.keyboard.press("f")  # FAIL, cursor in the evidence box (already holding the old quote)
    page.keyboard.press("Enter")  # saves the correction
    expect(page.locator("#status-correct_amount")).to_contain_text("Saved as revision 2")
    rows = list(Label.objects.filter(criterion__key="correct_amount").order_by("revision"))
    assert [(x.outcome, x.revision, x.is_current) for x in rows] == [("PASS", 1, False), ("FAIL", 2, True)]


def test_a_save_asked_for_between_a_swap_and_its_settling_is_not_lost(live_server, new_page):
    """htmx wires a swapped-in form's triggers when it settles (20 ms later), and until then the new form
    wears the old one's classes (htmx-request too): a key pressed in between used to queue a save behind a
    request that had already ended (the keyboard test's rare failure). Pressed there on purpose here."""
    eval_set, rv, outputs = labeling_setup(n_outputs=1, criteria=FOUR)
    make_user("kim")
    page = new_page()
    log_in(page, live_server.url, "kim")
    page.get_by_role("button", name="Next").first.click()
    keys_ready(page)
    page.keyboard.press("f")  # correct_amount is current: FAIL, and the cursor lands in its evidence box
    page.keyboard.type("NONE")
    # When that save's answer is swapped in, and before it settles: type a quote and press Esc (which saves).
    page.evaluate(
        """() => {
          document.body.addEventListener("htmx:afterSwap", () => {
            setTimeout(() => {
              const ev = document.querySelector("#criterion-correct_amount textarea[name=evidence]");
              ev.focus();
              ev.value = "refund of $40.00";
              ev.dispatchEvent(new KeyboardEvent("keydown", {key: "Escape", bubbles: true}));
            }, 0);
          }, {once: true});
        }"""
    )
    page.keyboard.press("Enter")
    expect(page.locator("#status-correct_amount")).to_contain_text("the quote is in the transcript")
    label = Label.objects.get(criterion__key="correct_amount", is_current=True)
    assert (label.outcome, label.evidence) == ("FAIL", "refund of $40.00")


def test_gold_saved_in_another_tab_is_not_overwritten_unseen(live_server, new_page):
    """Issue 20 item 8: a page that shows the item undecided (a tab left open, or Back after Save gold label
    when the browser shows the page from before) must not replace the gold saved since without a confirmation.
    (Chromium here reloads on Back, so two tabs of one reviewer give the same page deterministically.)"""
    from ..factories import annotate_directly

    eval_set, rv, (output,) = labeling_setup(n_outputs=1)
    annotate_directly(output, rv, make_user("ada"), {"correct_amount": ("PASS", "NONE"), "next_step": ("PASS", "NONE")})
    annotate_directly(output, rv, make_user("bo"), {"correct_amount": ("FAIL", "NONE"), "next_step": ("PASS", "NONE")})
    make_user("rex", "reviewer")
    page = new_page()
    log_in(page, live_server.url, "rex")
    page.get_by_role("link", name="Adjudicate").first.click()
    page.get_by_role("link", name="Start with the first").click()
    other = page.context.new_page()  # the same reviewer's second tab on the same item
    other.goto(page.url)
    other.get_by_label("FAIL", exact=True).check()
    other.get_by_label(re.compile("^Rationale")).fill("first look")
    other.get_by_role("button", name="Save gold label").click()
    expect(other.get_by_text("Gold for correct_amount on case-001: FAIL.")).to_be_visible()

    page.get_by_label("PASS", exact=True).check()
    page.get_by_label(re.compile("^Rationale")).fill("second look")
    page.get_by_role("button", name="Save gold label").click()
    expect(page.get_by_text("You already saved a gold label for this item after this page was loaded")).to_be_visible()
    assert list(GoldLabel.objects.values_list("outcome", "revision")) == [("FAIL", 1)]
    expect(page.get_by_label(re.compile("^Rationale"))).to_have_value("second look")  # nothing typed is lost
    screenshot(page, "adjudication_stale_confirm")
    page.get_by_role("button", name="Change the gold label from FAIL to PASS").click()
    expect(page.get_by_text("Gold for correct_amount on case-001: PASS.")).to_be_visible()
    rows = GoldLabel.objects.order_by("revision").values_list("outcome", "revision", "is_current")
    assert list(rows) == [("FAIL", 1, False), ("PASS", 2, True)]
