"""A large eval set's report page polls every 2 s while a worker computes newer figures. Each render of held-out
figures is a counted look (docs/calibration.md, "Why looks are counted"); a poll that brings back the very figures
the page already shows teaches the person nothing new and must not count, or a lead who leaves the page open for
a minute would spend thirty looks. The poll that brings new figures counts one.

The world is tests/guidance_helpers.held_out_world (12 outputs, `support-judge-v2` measured on the 6 held-out
ones), made "large" by lowering ICEWATER_REPORT_STORED_FROM_ITEMS so that its report is a stored one; the
worker's own function computes it here, in the test process (the real worker is tested in
test_report_figures_worker.py)."""

from __future__ import annotations

import pytest
from django.db.models import F
from django.urls import reverse

from calibration.models import ReportFigures
from calibration.report import stored_report
from calibration.report.page import SHOWN_CHANGE_HEADER
from evals.models import Role
from judging.gold_splits import look_count
from tests.factories import make_user
from tests.guidance_helpers import held_out_world

pytestmark = pytest.mark.django_db


def test_a_poll_that_brings_back_the_same_held_out_figures_counts_no_look(client, settings):
    settings.ICEWATER_REPORT_STORED_FROM_ITEMS = 1
    lead = make_user("lead", Role.LEAD)
    world = held_out_world(lead)
    client.force_login(lead)
    url = reverse("calibration:report", args=[world.eval_set.pk, world.rubric.pk, world.v2.pk])
    split = world.split

    first = client.get(url).content.decode()
    assert "not computed yet" in first and look_count(split) == 0  # no figures shown, no look

    row = ReportFigures.objects.get(eval_set=world.eval_set, rubric_version=world.rubric, judge_config=world.v2)
    assert stored_report.recompute(row.pk) == 1
    ReportFigures.objects.filter(pk=row.pk).update(wanted=F("wanted") + 1)  # a label came: behind, polling
    row.refresh_from_db()

    page = client.get(url).content.decode()
    assert look_count(split) == 1  # the held-out figures shown: one look
    assert "updating…" in page and 'hx-trigger="every 2s"' in page
    assert f'"{SHOWN_CHANGE_HEADER}": "{row.done}"' in page  # the poll says which figures it shows

    for _ in range(3):  # the poll, the same figures back each time
        again = client.get(url, headers={"HX-Request": "true", SHOWN_CHANGE_HEADER: str(row.done)})
        assert again.status_code == 200 and "updating…" in again.content.decode()
    assert look_count(split) == 1

    # The worker's newer figures arrive on the next poll: the person sees new held-out figures, one more look.
    assert stored_report.recompute(row.pk) == 1
    newer = client.get(url, headers={"HX-Request": "true", SHOWN_CHANGE_HEADER: str(row.done)})
    assert newer.status_code == 200 and "updating…" not in newer.content.decode()
    assert look_count(split) == 2
    # A reload (no header) is a look like any visit (negative control of the header's part).
    client.get(url)
    assert look_count(split) == 3
