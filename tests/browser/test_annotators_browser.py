"""The annotators page at a laptop's 1366x768: the table fits without scrolling sideways."""

from __future__ import annotations

import pytest
from playwright.sync_api import expect

from evals.models import Role

from ..annotator_helpers import build_world
from ..factories import make_user
from .browser_helpers import screenshot
from .test_calibration_browser import log_in

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def test_the_flagged_annotator_reads_without_scrolling_sideways(live_server, new_page):
    make_user("lee", Role.LEAD)
    es, rv, key = build_world(blocks=6)
    page = new_page(1366, 768)
    log_in(page, live_server.url)
    page.goto(f"{live_server.url}/calibration/annotators/{es.pk}/{rv.pk}/")
    expect(page.locator("#flagged")).to_contain_text("ann-c")
    expect(page.locator(f"#criterion-{key} tr.flagged")).to_contain_text("below the rest")
    # Neither the page nor the table's own scroll box is wider than what is shown.
    assert page.evaluate("document.documentElement.scrollWidth <= window.innerWidth")
    box = page.locator(f"#criterion-{key} .table-scroll")
    assert box.evaluate("el => el.scrollWidth <= el.clientWidth")
    page.locator(f"#criterion-{key}").scroll_into_view_if_needed()
    screenshot(page, "annotators-1366")
