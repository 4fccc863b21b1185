"""In real Chromium: the judge workbench's pages fit a laptop (1366x768) and a desktop (1920x1080) without
sideways scrolling, with the result above the fold."""

from __future__ import annotations

import pytest
from playwright.sync_api import expect

from evals.models import Role

from ..calibration_factories import bulk_calibration, make_judge, rejudge
from ..factories import make_eval_set, make_rubric_version, make_user
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
