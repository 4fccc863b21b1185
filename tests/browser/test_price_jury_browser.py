"""In Chromium, at 1366x768: the report's price of gating with a jury (issue 38), the jury's labels under the
judge's, with no sideways scroll."""

from __future__ import annotations

import pytest
from django.urls import reverse

from evals.models import Role
from tests.calibration.report.test_price_jury import KEY, ROWS, grade
from tests.factories import calibration_set, make_eval_set, make_judge, make_rubric_version, make_user

from .browser_helpers import screenshot
from .test_labeling_browser import log_in

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

OVERFLOW = "() => document.documentElement.scrollWidth - document.documentElement.clientWidth"


def test_the_jury_s_price_shows_under_the_judge_s_and_fits_the_screen(live_server, new_page):
    make_user("lee", Role.LEAD)
    rv = make_rubric_version(name="refund")
    judge = make_judge("gpt-judge")
    cal = make_eval_set("cal")
    rows = ROWS * 3
    outputs = calibration_set(cal, rv, judge, [{KEY: (g, g, j)} for g, j, _ in rows])
    grade(cal, rv, make_judge("claude-judge"), outputs, [o for _, _, o in rows])
    page = new_page(1366, 768)
    log_in(page, live_server.url, "lee")
    page.goto(live_server.url + reverse("calibration:report", args=[cal.pk, rv.pk, judge.pk]))
    row = page.locator(f"#price-{KEY}")
    assert "jury ≈" in row.inner_text() and "with the jury of claude-judge" in row.inner_text()
    assert page.evaluate(OVERFLOW) == 0
    page.locator("#gating-price").scroll_into_view_if_needed()
    screenshot(page, "report_gating_price_jury_1366")
