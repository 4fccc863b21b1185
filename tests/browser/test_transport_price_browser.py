"""In Chromium, at 1366x768 and 1920x1080: the gate result page's transport check (the warning, the rates side by
side) and the report's price of gating, with no sideways scroll."""

from __future__ import annotations

import pytest
from django.urls import reverse

from calibration.models import GateResult
from tests.calibration.gate.test_gate_transport import candidate, give_gold, run_gate

from .browser_helpers import screenshot
from .test_labeling_browser import log_in

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

OVERFLOW = "() => document.documentElement.scrollWidth - document.documentElement.clientWidth"


@pytest.mark.parametrize(("width", "height"), [(1366, 768), (1920, 1080)])
def test_the_transport_warning_and_the_price_of_gating_fit_the_screen(live_server, new_page, width, height):
    rv, judged_pass, judged_fail = candidate()
    give_gold(rv, judged_pass[:15], "FAIL")
    give_gold(rv, judged_pass[15:25], "PASS")
    give_gold(rv, judged_fail[:2], "FAIL")
    run_gate("json")
    result = GateResult.objects.get()
    page = new_page(width, height)
    log_in(page, live_server.url, "lee")
    page.goto(live_server.url + reverse("calibration:gate_result", args=[result.pk]))
    warning = page.locator("#transport-warning-correct_amount")
    assert "the judge's errors moved" in warning.inner_text()
    assert page.evaluate(OVERFLOW) == 0
    page.locator("#transport").scroll_into_view_if_needed()
    screenshot(page, f"gate_transport_{width}")
    report = reverse("calibration:report", args=[result.eval_set_id, rv.pk, result.judge_config_id])
    page.goto(live_server.url + report)
    price = page.locator("#price-correct_amount")
    assert "gating correct_amount at the minimum 0.5 costs about" in price.inner_text()  # the mark's (issue 40)
    assert "on the worse side" in price.inner_text()
    # The candidate's report tests the mark's calibration rates on its gold (issue 40): the same move as the gate's.
    assert "the judge's errors moved" in page.locator("#report-transport-correct_amount").inner_text()
    assert page.evaluate(OVERFLOW) == 0
    page.locator("#gating-price").scroll_into_view_if_needed()
    screenshot(page, f"report_gating_price_{width}")
