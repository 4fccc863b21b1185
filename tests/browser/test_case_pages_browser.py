"""A lead finds outputs on the eval set page and reads one output with every quote marked (demo data)."""

from __future__ import annotations

from io import StringIO

import pytest
from django.core.management import call_command
from playwright.sync_api import expect

from overview.management.commands.load_demo import EVAL_SET

from .browser_helpers import screenshot
from .test_csp_browser import log_in

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def test_a_lead_filters_an_eval_set_and_opens_an_output_with_all_quotes_marked(live_server, new_page):
    call_command("load_demo", verbosity=0, stdout=StringIO())
    page = new_page()
    log_in(page, live_server.url, "lee")
    page.goto(live_server.url + "/calibration/")
    page.get_by_role("link", name=EVAL_SET).first.click()
    expect(page.get_by_role("heading", name=EVAL_SET)).to_be_visible()
    everything = page.locator("#outputs tbody tr").count()
    assert everything > 0
    page.get_by_label("Show").select_option("disagreement")
    page.get_by_role("button", name="Filter").click()
    expect(page.get_by_label("Show")).to_have_value("disagreement")
    disagreed = page.locator("#outputs tbody tr").count()
    assert 0 < disagreed < everything
    screenshot(page, "eval-set-page")
    page.locator("#outputs tbody tr a").first.click()
    expect(page.locator("#transcript")).to_be_visible()
    expect(page.locator("[data-part=response]")).to_have_count(1)
    assert page.locator("mark.q-a").count() + page.locator("mark.q-b").count() > 0
    # names appear: a disagreement means both annotations are in
    expect(page.get_by_text("Annotator A (").first).to_be_visible()
    screenshot(page, "output-page")
