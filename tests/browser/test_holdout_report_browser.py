"""The calibration report of a judge version with examples, in real Chromium: the held-out note under the title,
no horizontal scroll at a laptop's and a desktop's size, and the look it counts."""

from __future__ import annotations

import pytest
from playwright.sync_api import expect

from evals.models import Role, RubricVersion
from judging.gold_splits import look_count, start_split
from judging.guidance import derive_config

from ..factories import add_verdict, make_llm_judge, make_run, make_user
from ..guidance_helpers import example, gold_set
from .browser_helpers import screenshot
from .test_labeling_browser import log_in

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

GOLDS = [{"next_step": "PASS"}] * 6 + [{"next_step": "FAIL"}] * 6


def test_the_report_of_a_version_with_examples_says_held_out_only_at_both_sizes(live_server, new_page):
    lee = make_user("lee", Role.LEAD)
    eval_set, rubric, outputs = gold_set(GOLDS)
    RubricVersion.objects.filter(pk=rubric.pk).update(status=RubricVersion.Status.APPROVED)
    split = start_split(eval_set=eval_set, rubric_version=rubric, by=lee, seed=3)
    gold = {o.pk: g["next_step"] for o, g in zip(outputs, GOLDS, strict=True)}
    dev = next(o for o in outputs if o.pk in split.development)
    v2 = derive_config(
        base=make_llm_judge(name="support-judge"),
        guidance={"rubric": rubric.ref, "criteria": {"next_step": {"examples": [example(dev, gold[dev.pk])]}}},
        by=lee,
    )
    run = make_run(eval_set, rubric, v2)
    for o in outputs:
        add_verdict(run, o, "next_step", gold[o.pk] if o.pk in split.development else "PASS")
    url = f"{live_server.url}/calibration/report/{eval_set.pk}/{rubric.pk}/{v2.pk}/"
    for n, (width, height) in enumerate([(1366, 768), (1920, 1080)], start=1):
        page = new_page(width, height)
        log_in(page, live_server.url, "lee")
        page.goto(url)
        note = page.locator("#split-note")
        expect(note).to_contain_text("held-out split only (6 outputs)")
        expect(note).to_contain_text(f"looked at {n - 1} time")
        assert note.bounding_box()["y"] < height  # above the fold
        assert page.evaluate("document.documentElement.scrollWidth <= window.innerWidth")
        screenshot(page, f"holdout-report-{width}")
    assert look_count(split) == 2
