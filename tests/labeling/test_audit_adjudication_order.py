"""Reviewers settle an audit's items in its order (issue 22): an item of the audit order's released part whose
annotators disagree counts against the plan's decision until it is settled, so the adjudication queue puts
those items first, by position, and the next item after a decision is the next of them."""

from __future__ import annotations

import pytest
from django.urls import reverse

from evals.models import Role
from labeling.adjudicate import pending_items
from tests.audit_helpers import KEY, candidate, gold, in_order, plan_on
from tests.factories import make_user

pytestmark = pytest.mark.django_db


def disagreements_against_case_order():
    """A candidate with 10 of 40 released and three disagreements: two released ones whose positions run
    against their case ids, and one output outside the released part."""
    c = candidate(n=40)
    plan = plan_on(c, release=10)
    order = in_order(plan)
    early, late = next(
        (order[i], order[j])
        for i in range(10)
        for j in range(i + 1, 10)
        if order[i].case.case_id > order[j].case.case_id
    )
    unreleased = min(order[10:], key=lambda o: o.case.case_id)  # first by case id: case order alone puts it first
    for output in (late, unreleased, early):
        gold(c, output, "PASS", second="FAIL")
    return c, order, early, late, unreleased


def test_released_audit_items_come_first_in_the_audit_order_then_case_order():
    c, order, early, late, unreleased = disagreements_against_case_order()
    reviewer = make_user("rey", Role.REVIEWER)
    items = pending_items(c.eval_set, c.rubric_version, reviewer)
    assert [i.output_id for i in items] == [early.pk, late.pk, unreleased.pk]
    assert [i.audit_position for i in items] == [order.index(early) + 1, order.index(late) + 1, None]
    assert {i.criterion_key for i in items} == {KEY}


def test_without_an_audit_the_queue_stays_in_case_order():
    # Negative control: the same three disagreements on an eval set without an audit order.
    c = candidate(n=12)
    outputs = sorted(c.outputs, key=lambda o: o.case.case_id)
    for output in (outputs[7], outputs[2], outputs[5]):
        gold(c, output, "PASS", second="FAIL")
    items = pending_items(c.eval_set, c.rubric_version, make_user("rey", Role.REVIEWER))
    assert [i.output_id for i in items] == [outputs[2].pk, outputs[5].pk, outputs[7].pk]
    assert all(i.audit_position is None for i in items)


def test_the_queue_page_marks_them_and_a_decision_leads_to_the_next_of_them(client):
    c, order, early, late, unreleased = disagreements_against_case_order()
    client.force_login(make_user("rey", Role.REVIEWER))
    url = reverse("labeling:adjudication_queue") + f"?eval_set={c.eval_set.pk}&rubric_version={c.rubric_version.pk}"
    page = client.get(url).content.decode()
    assert "in the audit order, then by case" in page
    assert f"audit #{order.index(early) + 1}</span>" in page and f"audit #{order.index(late) + 1}</span>" in page
    assert page.index(early.case.case_id) < page.index(late.case.case_id) < page.index(unreleased.case.case_id)
    criterion = c.rubric_version.criteria.get(key=KEY)
    form = client.get(reverse("labeling:adjudicate", args=[early.pk, criterion.pk])).context["form"]
    response = client.post(
        reverse("labeling:adjudicate", args=[early.pk, criterion.pk]),
        {**form.initial, "outcome": "PASS", "rationale": "the amount matches the order"},
    )
    assert response.status_code == 302
    assert response["Location"] == reverse("labeling:adjudicate", args=[late.pk, criterion.pk])
