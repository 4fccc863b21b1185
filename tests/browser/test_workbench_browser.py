"""In real Chromium: the judge workbench's pages fit a laptop (1366x768) and a desktop (1920x1080) without
sideways scrolling, with the result above the fold."""

from __future__ import annotations

import re
import time

import pytest
from playwright.sync_api import expect

from calibration.gate.approvals import approve_rubric_version
from calibration.models import GatingMark
from evals.models import Output, Role
from judging import runner
from judging.models import GoldSplit, HoldoutLook, JudgeConfig, JudgeRun

from ..factories import (
    annotate,
    annotator,
    bulk_calibration,
    make_eval_set,
    make_judge,
    make_llm_judge,
    make_output,
    make_rubric_version,
    make_user,
    rejudge,
)
from ..judging_helpers import judge_in_process
from .browser_helpers import screenshot

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

OVERFLOW = "() => document.documentElement.scrollWidth - document.documentElement.clientWidth"
P, F = "PASS", "FAIL"


@pytest.fixture
def two_versions():
    make_user("lee", Role.LEAD)
    es, rv = make_eval_set("cal"), make_rubric_version("refund", "1")
    a, b = make_judge("refund-judge"), make_judge("refund-judge-v2")
    # A: 60 true passes, 25 false passes, 5 false fails, 30 true fails on correct_amount.
    outputs = bulk_calibration(es, rv, a, {"correct_amount": (60, 25, 5, 30), "next_step": (70, 10, 10, 30)})
    # B fixes 20 of A's false passes and its 5 false fails, and breaks 2 true passes.
    b_outcomes = [P] * 58 + [F] * 2 + [F] * 20 + [P] * 5 + [P] * 5 + [F] * 30
    rejudge(es, rv, b, outputs, "correct_amount", b_outcomes)
    rejudge(es, rv, b, outputs, "next_step", [P] * 70 + [P] * 10 + [F] * 10 + [F] * 30)
    return es, rv, a, b


def log_in(page, base: str) -> None:
    page.goto(base + "/accounts/login/")
    page.get_by_label("Username").fill("lee")
    page.get_by_label("Password").fill("pw-for-tests-1")
    page.get_by_role("button", name="Log in").click()


@pytest.mark.parametrize("size", [(1366, 768), (1920, 1080)])
def test_the_comparison_fits_the_screen_with_the_result_above_the_fold(live_server, new_page, two_versions, size):
    es, rv, a, b = two_versions
    page = new_page(*size)
    log_in(page, live_server.url)
    page.goto(
        f"{live_server.url}/calibration/workbench/compare/?eval_set={es.pk}&rubric_version={rv.pk}&a={a.pk}&b={b.pk}"
    )
    card = page.locator("#criterion-correct_amount")
    expect(card.locator(".mcnemar")).to_contain_text(
        "B fixed 25, broke 2 (88 right and 5 wrong for both). McNemar's exact p < 0.001"
    )
    # False passes first: A's fixed false passes lead the list of flips.
    expect(card.locator(".flips li").first).to_contain_text("A's false pass")
    assert page.evaluate(OVERFLOW) == 0
    top = card.locator(".false-pass-row").bounding_box()
    assert top is not None and top["y"] + top["height"] <= size[1]
    screenshot(page, f"workbench-compare-{size[0]}x{size[1]}")


# -- the whole loop, end to end: a real Celery worker, the fake LLM made to learn from examples ------------

RUN_TIMEOUT_S = 120
SIZES = [(1366, 768), (1920, 1080)]


def wait_for_runs(judge: JudgeConfig, count: int) -> None:
    """Until `count` runs of this judge have ended (a worker works them; no timing is asserted)."""
    deadline = time.monotonic() + RUN_TIMEOUT_S
    while time.monotonic() < deadline:
        runs = JudgeRun.objects.filter(judge_config=judge)
        if runs.count() >= count and not runs.filter(status__in=JudgeRun.ACTIVE).exists():
            return
        time.sleep(0.3)
    raise AssertionError(f"{judge.name}'s runs did not end in {RUN_TIMEOUT_S} s")


@pytest.fixture
def loop_world(fake_llm, judge_key):
    """20 outputs: even ones refund $45.00 (gold FAIL on correct_amount), odd ones $40.00 (gold PASS). The fake
    judge passes everything unless an example teaches it otherwise: the first version false-passes every $45."""
    fake_llm.learns = True
    lead = make_user("lee", Role.LEAD)
    es, rv = make_eval_set("support"), make_rubric_version("refund", "1")
    amy, bo = annotator("amy"), annotator("bo")
    for i in range(20):
        wrong = i % 2 == 0
        amount = "$45.00" if wrong else "$40.00"
        output = make_output(es, case_id=f"c{i:02d}", response=f"Case {i}: I have issued a refund of {amount} today.")
        gold = "FAIL" if wrong else "PASS"
        quote = f"a refund of {amount}"
        for who, slot in ((amy, 1), (bo, 2)):
            annotate(output, rv, who, slot, {"correct_amount": gold, "next_step": "PASS"}, {"correct_amount": quote})
    approve_rubric_version(rubric_version=rv, by=lead, reason="reviewed")
    base = make_llm_judge(fake_llm, name="refund-judge")
    judge_in_process(runner.Scope(es, rv, base))
    return es, rv, base


def fits(page) -> None:
    assert page.evaluate(OVERFLOW) == 0, page.url


def test_a_lead_improves_a_judge_end_to_end(live_server, new_page, loop_world, workers):
    es, rv, base = loop_world
    workers(concurrency=2)
    page = new_page(*SIZES[0])
    log_in(page, live_server.url)

    # 1. The guidance editor: fix the split, take the first suggestion (a false pass), write a note, save.
    page.goto(f"{live_server.url}/calibration/workbench/{base.pk}/{es.pk}/{rv.pk}/edit/correct_amount/")
    page.get_by_role("button", name="Fix the development and held-out split").click()
    split = GoldSplit.objects.get(eval_set=es, rubric_version=rv)
    suggestions = page.locator("#suggestions .suggestion")
    expect(suggestions.first).to_contain_text("false pass")
    fits(page)
    screenshot(page, "workbench-editor-1366x768")
    suggestions.first.get_by_role("button", name="Use this example").click()
    expect(page.locator("fieldset.example")).to_have_count(1)
    page.get_by_label("Instructions for the judge").fill("The refund must be the reference's amount.")
    page.get_by_role("button", name="Show the diff").click()
    expect(page.locator("#guidance-diff .d-add").first).to_be_visible()
    expect(page.locator("#guidance-diff")).to_contain_text("example 1: output")
    page.get_by_role("button", name="Save as a new version").click()
    v2 = JudgeConfig.objects.get(derived_from=base)
    assert [e["split"] for e in v2.guidance["correct_amount"]["examples"]] == ["development"]

    # 2. The version page counts the calls before the re-run: one per development output (nothing cached).
    development = len(split.development)
    expect(page.locator(".call-count")).to_contain_text(f"{development} model calls")
    fits(page)
    screenshot(page, "workbench-version-1366x768")
    page.get_by_role("button", name=re.compile(r"Re-run on development")).click()
    # The run page's progress panel, swapped in by htmx, follows the run on the workbench until it ends.
    expect(page.locator("#run-progress .status")).to_have_text("Done", timeout=RUN_TIMEOUT_S * 1000)
    wait_for_runs(v2, 1)

    # 3. Compare on development: every false pass of development fixed, none broken, McNemar shown.
    page.goto(f"{live_server.url}/calibration/workbench/{v2.pk}/{es.pk}/{rv.pk}/")
    page.get_by_role("link", name=f"{base.name} vs {v2.name}").click()
    card = page.locator("#criterion-correct_amount")
    fails_in_dev = sum(1 for o in split.development if Output.objects.get(pk=o).response.count("$45.00"))
    expect(page.locator(".split-line")).to_contain_text("development split")
    expect(card.locator(".mcnemar")).to_contain_text(f"B fixed {fails_in_dev}, broke 0")
    expect(card.locator(".compare-figures")).to_contain_text("1.00")  # B's kappa on development
    expect(card.locator(".flips li").first).to_contain_text("A's false pass")
    fits(page)
    screenshot(page, "workbench-loop-compare-1366x768")

    # 4. The held-out figures, on request: counted.
    page.get_by_role("button", name="Show the held-out figures (counts as a look)").click()
    expect(page.locator(".held-out-looks")).to_have_text("held out: looked at 1 time")
    assert HoldoutLook.objects.filter(split=split).count() == 1

    # 5. Promote: run on held-out (a second look), then the report reads the held-out split and a mark follows.
    page.goto(f"{live_server.url}/calibration/workbench/{v2.pk}/{es.pk}/{rv.pk}/")
    page.get_by_role("button", name="Run on held-out (counts as a look)").click()
    wait_for_runs(v2, 2)
    assert HoldoutLook.objects.filter(split=split).count() == 2
    page.goto(f"{live_server.url}/calibration/report/{es.pk}/{rv.pk}/{v2.pk}/")
    expect(page.locator("#split-note")).to_contain_text("held-out split only")
    panel = page.locator("#approval-panel")
    panel.get_by_label("Criterion").select_option("correct_amount")
    panel.get_by_role("checkbox", name="Override").check()
    panel.get_by_role("textbox", name="Reason").fill("Fixed by examples; measured on the held-out split only")
    panel.get_by_role("button", name="Mark as gating").click()
    expect(page.locator("#criterion-correct_amount .gating-pill")).to_contain_text("gating")
    mark = GatingMark.objects.get(judge_config=v2)
    assert mark.criterion.key == "correct_amount"

    for width, height in SIZES[1:]:
        page.set_viewport_size({"width": width, "height": height})
        for path, name in (
            (f"/calibration/workbench/{base.pk}/{es.pk}/{rv.pk}/edit/correct_amount/", "editor"),
            (f"/calibration/workbench/{v2.pk}/{es.pk}/{rv.pk}/", "version"),
        ):
            page.goto(live_server.url + path)
            if name == "version":  # the latest run's progress panel, swapped in by htmx
                expect(page.locator("#run-progress .status")).to_have_text("Done")
            fits(page)
            screenshot(page, f"workbench-{name}-{width}x{height}")
