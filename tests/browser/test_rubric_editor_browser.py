"""A lead edits a rubric in the browser: a new version with an edited definition and a new order, its diff,
its approval, and the labeling queue moved to it."""

from __future__ import annotations

import pytest
from playwright.sync_api import expect

from evals.models import Role, RubricVersion
from labeling.models import LabelingQueue

from ..factories import labeling_setup, make_user
from .browser_helpers import screenshot
from .test_labeling_browser import log_in

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

TWO = [
    {"key": "correct_amount", "definition": "The amount is right.", "pass_example": "$40", "fail_example": "$50"},
    {"key": "polite", "definition": "The reply is polite.", "pass_example": "", "fail_example": ""},
]
SHARPER = "The refunded amount equals refundable_amount in the policy tool's result, to the cent."


def test_a_lead_makes_a_new_version_sees_its_diff_approves_it_and_moves_the_queue(live_server, new_page):
    lead = make_user("leah", Role.LEAD)
    eval_set, base, _ = labeling_setup(criteria=TWO, lead=lead)
    page = new_page(width=1366, height=768)
    log_in(page, live_server.url, "leah")
    page.goto(f"{live_server.url}/rubrics/{base.pk}/")
    page.get_by_role("link", name="New version from this one").click()

    expect(page.locator("#id_version")).to_have_value("2")  # the next free name
    page.locator("#id_form-0-definition").fill(SHARPER)
    page.locator("#id_form-0-order").fill("2")  # correct_amount after polite
    page.locator("#id_form-1-order").fill("1")
    page.get_by_role("button", name="Save as a new draft version").click()
    # The new version's page: the save is done. Only then the picture (a capture while the page navigates fails).
    expect(page.locator(".pill.status-draft")).to_be_visible()
    screenshot(page, "rubric_after_save")

    new = RubricVersion.objects.get(rubric=base.rubric, version="2")
    expect(page.get_by_role("heading", name=new.ref)).to_be_visible()
    expect(page.locator(".pill.status-draft")).to_be_visible()
    assert list(new.criteria.order_by("order").values_list("key", flat=True)) == ["polite", "correct_amount"]
    # The diff against the version before: the old definition out, the new one in.
    expect(page.locator(".rubric-diff .d-remove", has_text="The amount is right.")).to_have_count(1)
    expect(page.locator(".rubric-diff .d-add", has_text=SHARPER)).to_have_count(1)
    screenshot(page, "rubric_version_diff")

    page.get_by_label("Reason").fill("Sharper amount definition after the disagreements on refunds")
    page.get_by_role("button", name=f"Approve {new.ref}").click()
    expect(page.locator(".pill.status-approved")).to_be_visible()
    assert RubricVersion.objects.get(pk=new.pk).status == RubricVersion.Status.APPROVED
    assert RubricVersion.objects.get(pk=base.pk).content_hash == base.content_hash  # the old one is untouched

    page.get_by_role("button", name=f"Move {eval_set.name}'s queue to {new.ref}").click()
    expect(page.get_by_text(f"{eval_set.name} is now labeled under {new.ref}.")).to_be_visible()
    assert LabelingQueue.objects.get(eval_set=eval_set, is_current=True).rubric_version_id == new.pk
