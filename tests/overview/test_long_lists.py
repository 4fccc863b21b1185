"""Long lists are paginated: My work and the gate history (the verdicts page: tests/judging/test_judging_views.py)."""

from __future__ import annotations

import pytest
from django.urls import reverse

from calibration.models import GateResult
from labeling.models import Annotation
from tests.factories import annotate, default_workspace, make_eval_set, make_output, make_rubric_version

pytestmark = pytest.mark.django_db


def test_my_work_shows_fifty_annotations_a_page_newest_first(client, annotator):
    es, rv = make_eval_set(), make_rubric_version()
    for i in range(55):
        annotate(make_output(es, case_id=f"w-{i:02d}"), rv, annotator, 1, {})
    client.force_login(annotator)
    first = client.get(reverse("labeling:my_work"))
    assert len(first.context["annotations"]) == 50
    assert first.context["annotations"][0].output.case.case_id == "w-54"
    assert "55 annotations" in first.content.decode() and "page=2" in first.content.decode()
    second = client.get(reverse("labeling:my_work") + "?page=2")
    assert [a.output.case.case_id for a in second.context["annotations"]] == [f"w-{i:02d}" for i in range(4, -1, -1)]
    garbage = client.get(reverse("labeling:my_work") + "?page=-3x")
    assert garbage.status_code == 200 and garbage.context["page"].number == 1
    assert Annotation.objects.count() == 55


def test_a_short_my_work_has_no_page_links(client, annotator):
    annotate(make_output(make_eval_set(), case_id="only"), make_rubric_version(), annotator, 1, {})
    client.force_login(annotator)
    assert "page=" not in client.get(reverse("labeling:my_work")).content.decode()


def test_the_gate_history_is_paginated(client, lead):
    GateResult.objects.bulk_create(
        GateResult(
            workspace=default_workspace(),
            decision="passed",
            source="cli",
            eval_set_name=f"rc-{i}",
            rubric_ref="r@1",
            judge_name="j",
        )
        for i in range(60)
    )
    client.force_login(lead)
    first = client.get(reverse("calibration:gates"))
    assert len(first.context["results"]) == 50 and first.context["page"].paginator.num_pages == 2
    second = client.get(reverse("calibration:gates") + "?page=2")
    assert len(second.context["results"]) == 10
    assert "Page 2 of 2" in second.content.decode()
