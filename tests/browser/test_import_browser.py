"""In Chromium at 1366x768: the Import page's result is seen without scrolling, and an error keeps the chosen file."""

from __future__ import annotations

import pytest
from playwright.sync_api import expect

from evals.models import Role

from ..factories import make_user
from ..io_helpers import row_counts
from .browser_helpers import screenshot
from .test_labeling_browser import log_in

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]
BAD_CASES = b'{"case_id": "c1", "input": "Q", "response": "A"}\n{"case_id": "c2", "latency_ms": "x"}\n'


def in_view(page, locator) -> bool:
    box = locator.bounding_box()
    return box is not None and box["y"] >= 0 and box["y"] + min(box["height"], 60) <= page.viewport_size["height"]


def test_an_import_result_is_seen_without_scrolling_and_an_error_keeps_the_file(live_server, new_page, tmp_path):
    make_user("lee", Role.LEAD)
    page = new_page(1366, 768)
    log_in(page, live_server.url, "lee")
    page.goto(live_server.url + "/import/")
    card = page.locator("#upload-cases")
    card.get_by_label("Eval set").fill("refunds")
    bad = tmp_path / "junk.jsonl"
    bad.write_bytes(BAD_CASES)
    card.get_by_label("Cases file").set_input_files(str(bad))
    before = row_counts()
    card.get_by_role("button", name="Import").click()
    result = page.locator('#upload-result-cases [data-result="failed"]')
    expect(result).to_contain_text('junk.jsonl, line 2, field "input": is missing')
    screenshot(page, "import_result_1366")
    assert in_view(page, result), result.bounding_box()
    # The form was not swapped: the chosen file and the eval set are still there, ready to send again.
    assert (
        card.get_by_label("Cases file").evaluate("input => input.files.length === 1 && input.files[0].name")
        == "junk.jsonl"
    )
    expect(card.get_by_label("Eval set")).to_have_value("refunds")
    assert row_counts() == before
    good = tmp_path / "good.jsonl"
    good.write_bytes(BAD_CASES.replace(b'"latency_ms": "x"', b'"input": "Q2", "response": "B"'))
    card.get_by_label("Cases file").set_input_files(str(good))
    card.get_by_role("button", name="Import").click()
    ok = page.locator('#upload-result-cases [data-result="ok"]')
    expect(ok).to_contain_text("2 cases created")
    assert in_view(page, ok)


def test_a_lead_imports_judge_verdicts_on_their_own_card(live_server, new_page, tmp_path):
    from judging.models import JudgeRun, Verdict

    from ..factories import make_eval_set, make_output, make_rubric_version

    make_user("lee", Role.LEAD)
    es = make_eval_set("refunds")
    make_output(es, case_id="r-1", agent_version="v1", response="Refunded $40.00.")
    make_rubric_version("refund", "1")
    page = new_page(1366, 768)
    log_in(page, live_server.url, "lee")
    page.goto(live_server.url + "/import/")
    card = page.locator("#upload-verdicts")
    card.get_by_label("Eval set").select_option("refunds")
    card.get_by_label("Rubric version").select_option(label="refund@1")
    card.get_by_label("Judge config").fill("elsewhere")
    file = tmp_path / "verdicts.jsonl"
    file.write_text(
        '{"case_id": "r-1", "agent_version": "v1", "criterion": "correct_amount", "outcome": "PASS", '
        '"evidence": "$40.00", "raw": "PASS"}\n'
    )
    card.get_by_label("Verdicts file").set_input_files(str(file))
    card.get_by_role("button", name="Import").click()
    ok = page.locator('#upload-result-verdicts [data-result="ok"]')
    expect(ok).to_contain_text("verdicts.jsonl")
    assert in_view(page, ok), ok.bounding_box()
    expect(card.get_by_label("Judge config")).to_have_value("elsewhere")  # only the result region was swapped
    assert Verdict.objects.count() == 1 and JudgeRun.objects.get().imported_via == "page"
