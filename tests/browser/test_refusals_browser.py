"""In Chromium: a refused htmx request says why where the person was working, and what they typed stays."""

from __future__ import annotations

from importlib import import_module

import pytest
from django.conf import settings
from django.contrib.sessions.models import Session
from playwright.sync_api import expect

from evals.access import LABELING_REFUSED, SIGNED_OUT
from evals.models import Membership, Role
from labeling.models import Label

from ..factories import labeling_setup, make_user
from .browser_helpers import screenshot
from .test_labeling_browser import keys_ready, log_in, wait_saved

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def end_every_session() -> None:
    """Every session ended as a sign-out does it: through the session engine, which also drops the copy it keeps
    in the cache (cached_db); deleting the rows alone would leave the cached copy signed in."""
    store = import_module(settings.SESSION_ENGINE).SessionStore
    for key in Session.objects.values_list("session_key", flat=True):
        store().delete(key)


def test_a_demoted_or_signed_out_annotator_is_told_why_the_save_failed(live_server, new_page):
    labeling_setup(n_outputs=1)
    make_user("kim")
    page = new_page()
    log_in(page, live_server.url, "kim")
    page.get_by_role("button", name="Next").click()
    keys_ready(page)
    page.keyboard.press("p")
    page.keyboard.type("NONE")
    page.keyboard.press("Enter")
    wait_saved(page, "correct_amount")

    Membership.objects.filter(user__username="kim").update(role=Role.REVIEWER)  # a lead makes kim a reviewer meanwhile
    page.keyboard.press("f")  # next_step: FAIL, saved on change
    status = page.locator("#status-next_step")
    expect(status).to_have_text(LABELING_REFUSED)
    expect(status).to_have_attribute("role", "alert")
    screenshot(page, "refused_save_demoted")

    Membership.objects.filter(user__username="kim").update(role=Role.ANNOTATOR)
    end_every_session()  # signed out elsewhere, or the session ended
    page.keyboard.type("NONE")
    page.keyboard.press("Enter")
    expect(status).to_have_text(SIGNED_OUT)
    expect(page.get_by_label("Evidence for next_step")).to_have_value("NONE")  # what was typed stays
    assert page.locator("input[name=username]").count() == 0  # no login page inside the form
    assert list(Label.objects.values_list("criterion__key", "outcome")) == [("correct_amount", "PASS")]


def test_a_lead_signed_out_elsewhere_is_told_so_above_the_form_they_sent(live_server, new_page):
    make_user("lee", Role.LEAD)
    page = new_page()
    log_in(page, live_server.url, "lee")
    page.goto(live_server.url + "/api/gates/")
    form = page.locator("form[hx-post]")
    form.get_by_label("Project").fill("checkout")
    end_every_session()
    form.evaluate("f => { f.noValidate = true; }")  # the server refuses before it reads the fields
    form.get_by_role("button", name="Create token").click()
    error = page.locator("p.htmx-error")
    expect(error).to_have_text(SIGNED_OUT)
    expect(error).to_have_attribute("role", "alert")
    expect(form.get_by_label("Project")).to_have_value("checkout")
    screenshot(page, "refused_token_signed_out")
