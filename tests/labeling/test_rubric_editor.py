"""Rubric versions in the browser: a lead makes a new draft version from an existing one; the diff; approve; queue."""

from __future__ import annotations

import pytest
from django.test import Client
from django.urls import reverse

from evals.models import Criterion, RubricVersion
from labeling.models import LabelingQueue
from tests.factories import make_eval_set, make_rubric_version

pytestmark = pytest.mark.django_db

CRITERIA = [
    {"key": "correct_amount", "definition": "The amount is right.", "pass_example": "$40", "fail_example": "$50"},
    {"key": "polite", "definition": "The reply is polite.", "pass_example": "", "fail_example": ""},
]


@pytest.fixture
def base():
    return make_rubric_version("refund", "1", criteria=CRITERIA, instruction="Grade the reply.")


def post_data(version="2", instruction="Grade the reply carefully.", rows=None) -> dict:
    rows = (
        rows
        if rows is not None
        else [
            {"order": 2, "key": "correct_amount", "definition": "The refunded amount matches the tool result."},
            {
                "order": 1,
                "key": "grounded",
                "definition": "Every fact comes from a tool.",
                "pass_example": "as the tool says",
            },
            {"order": 3, "key": "polite", "definition": "The reply is polite.", "DELETE": "on"},
        ]
    )
    data = {
        "version": version,
        "instruction": instruction,
        "form-TOTAL_FORMS": str(len(rows)),
        "form-INITIAL_FORMS": "0",
    }
    for i, row in enumerate(rows):
        for k, v in row.items():
            data[f"form-{i}-{k}"] = v
    return data


def test_only_leads_may_edit_and_annotators_may_not_read(client, base, annotator, reviewer):
    url = reverse("labeling:rubric_edit", args=[base.pk])
    client.force_login(annotator)
    assert client.get(url).status_code == 403
    assert client.get(reverse("labeling:rubric_version", args=[base.pk])).status_code == 403
    client.force_login(reviewer)
    assert client.get(url).status_code == 403
    assert client.post(url, post_data()).status_code == 403
    assert client.get(reverse("labeling:rubric_version", args=[base.pk])).status_code == 200
    assert RubricVersion.objects.count() == 1


def test_the_editor_opens_with_the_version_and_the_next_free_name(client, base, lead):
    client.force_login(lead)
    page = client.get(reverse("labeling:rubric_edit", args=[base.pk]))
    assert page.context["form"].initial["version"] == "2"
    assert [f.initial.get("key") for f in page.context["formset"].forms][:2] == ["correct_amount", "polite"]
    assert "The amount is right." in page.content.decode()


def test_saving_makes_a_new_draft_version_with_edits_additions_removals_and_the_new_order(client, base, lead):
    client.force_login(lead)
    response = client.post(reverse("labeling:rubric_edit", args=[base.pk]), post_data())
    new = RubricVersion.objects.get(rubric=base.rubric, version="2")
    assert response.status_code == 302 and response["Location"] == reverse("labeling:rubric_version", args=[new.pk])
    assert new.status == RubricVersion.Status.DRAFT and new.instruction == "Grade the reply carefully."
    assert list(new.criteria.order_by("order").values_list("key", flat=True)) == ["grounded", "correct_amount"]
    assert new.content_hash == new.compute_hash() and new.content_hash != base.content_hash
    # the base is untouched
    assert list(base.criteria.order_by("order").values_list("key", "definition")) == [
        ("correct_amount", "The amount is right."),
        ("polite", "The reply is polite."),
    ]
    page = client.get(response["Location"]).content.decode()
    assert '<span class="d-remove">-Criterion polite:</span>' in page
    assert '<span class="d-add">+Criterion grounded:</span>' in page
    assert "adjudication queue" in page


@pytest.mark.parametrize(
    "data, message",
    [
        (post_data(version="1"), "already exists with different content"),
        (post_data(version="a@b"), "must not contain"),
        (post_data(rows=[{"order": 1, "key": "bad key!", "definition": "x"}]), "slug"),
        (post_data(rows=[{"order": "x", "key": "k", "definition": "x"}]), "whole number"),
        (post_data(rows=[{"order": 1, "key": "k", "definition": "x", "DELETE": "on"}]), "non-empty list"),
        (
            post_data(rows=[{"order": 1, "key": "k", "definition": "a"}, {"order": 2, "key": "k", "definition": "b"}]),
            "already the key",
        ),
        ({"version": "2"}, "ManagementForm"),
    ],
)
def test_bad_edits_say_what_is_wrong_and_save_nothing(client, base, lead, data, message):
    client.force_login(lead)
    response = client.post(reverse("labeling:rubric_edit", args=[base.pk]), data)
    assert response.status_code == 422
    assert message in response.content.decode()
    assert RubricVersion.objects.count() == 1 and Criterion.objects.count() == 2


def test_the_editor_needs_a_csrf_token(base, lead):
    csrf_client = Client(enforce_csrf_checks=True)
    csrf_client.force_login(lead)
    assert csrf_client.post(reverse("labeling:rubric_edit", args=[base.pk]), post_data()).status_code == 403
    assert RubricVersion.objects.count() == 1


def test_a_lead_moves_a_queue_to_the_new_version_with_one_button(client, base, lead):
    es = make_eval_set("support")
    LabelingQueue.objects.create(eval_set=es, rubric_version=base, opened_by=lead)
    client.force_login(lead)
    client.post(reverse("labeling:rubric_edit", args=[base.pk]), post_data())
    new = RubricVersion.objects.get(version="2")
    page = client.get(reverse("labeling:rubric_version", args=[new.pk])).content.decode()
    assert f"Move {es.name}'s queue to {new.ref}" in page
    assert f"/sets/{es.pk}/?rubric_version={base.pk}&amp;show=disagreement" in page
    client.post(reverse("labeling:queue_move", args=[es.pk]), {"rubric_version": new.pk, "reason": "moved"})
    assert LabelingQueue.objects.get(eval_set=es, is_current=True).rubric_version == new


def test_unknown_versions_are_404(client, lead):
    client.force_login(lead)
    assert client.get("/rubrics/99999/").status_code == 404
    assert client.get("/rubrics/99999/new").status_code == 404


def test_the_gold_policy_is_carried_into_the_new_version_and_a_change_is_in_the_diff(client, lead):
    safety = [dict(CRITERIA[0], gold_policy="any_fail")]
    base = make_rubric_version("safety", "1", criteria=safety, instruction="Grade it.")
    client.force_login(lead)
    page = client.get(reverse("labeling:rubric_edit", args=[base.pk])).content.decode()
    assert '<option value="any_fail" selected>' in page  # the editor opens with the version's policy
    row = {"order": 1, "key": "correct_amount", "definition": "The amount is right.", "gold_policy": "any_fail"}
    client.post(reverse("labeling:rubric_edit", args=[base.pk]), post_data(version="2", instruction="Grade it.",
                                                                            rows=[row]))  # fmt: skip
    kept = RubricVersion.objects.get(rubric=base.rubric, version="2")
    assert kept.criteria.get().gold_policy == "any_fail"
    response = client.post(
        reverse("labeling:rubric_edit", args=[base.pk]),
        post_data(version="3", instruction="Grade it.", rows=[{**row, "gold_policy": "unanimous"}]),
    )
    changed = RubricVersion.objects.get(rubric=base.rubric, version="3")
    assert changed.criteria.get().gold_policy == "unanimous" and changed.content_hash != kept.content_hash
    assert '<span class="d-add">+  gold policy: unanimous</span>' in client.get(response["Location"]).content.decode()
    bad = client.post(
        reverse("labeling:rubric_edit", args=[base.pk]),
        post_data(version="4", instruction="Grade it.", rows=[{**row, "gold_policy": "loudest"}]),
    )
    assert bad.status_code == 422 and "Select a valid choice" in bad.content.decode()
    assert not RubricVersion.objects.filter(rubric=base.rubric, version="4").exists()


def test_the_untouched_empty_row_the_browser_posts_is_not_a_criterion(client, base, lead):
    # The page always carries one empty row for a new criterion; a browser posts its select's default.
    rows = [
        {"order": 1, "key": "correct_amount", "definition": "The amount is right.", "gold_policy": "majority"},
        {"order": "", "key": "", "definition": "", "gold_policy": "majority"},
    ]
    client.force_login(lead)
    response = client.post(reverse("labeling:rubric_edit", args=[base.pk]), post_data(rows=rows))
    assert response.status_code == 302
    new = RubricVersion.objects.get(rubric=base.rubric, version="2")
    assert list(new.criteria.values_list("key", flat=True)) == ["correct_amount"]
