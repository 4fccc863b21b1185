"""The labeling page, the save endpoint, submit and the adjudication page run a fixed number of SQL queries,
whatever the number of criteria or outputs (2 vs 6 criteria, 1 vs 30 outputs with other people's labels)."""

from __future__ import annotations

import pytest
from django.core.cache import caches
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.urls import reverse

from labeling.models import Annotation, Criterion

from .factories import make_output, make_user
from .labeling_helpers import (  # noqa: F401 - fast_passwords is an autouse fixture
    all_answers,
    annotate_directly,
    fast_passwords,
    labeling_setup,
    next_url,
    page_url,
    save_url,
    six_criteria,
    submit_url,
)

pytestmark = pytest.mark.django_db

SMALL = {"criteria": None, "n_outputs": 1}  # the two default criteria, one output
LARGE = {"criteria": six_criteria(), "n_outputs": 30}


def world(criteria, n_outputs):
    """An eval set whose other outputs are double-labeled by others, and a draft for `me` on the first free one."""
    eval_set, rv, outputs = labeling_setup(n_outputs=n_outputs, criteria=criteria)
    others = [make_user(), make_user()]
    for output in outputs[1:]:
        for user in others:
            annotate_directly(output, rv, user, all_answers(rv))
    return eval_set, rv, outputs


def count(fn) -> int:
    with CaptureQueriesContext(connection) as ctx:
        response = fn()
    assert response.status_code in (200, 302), response.content[:500]
    return len(ctx.captured_queries)


def labeling_page_queries(client, criteria, n_outputs):
    eval_set, rv, outputs = world(criteria, n_outputs)
    me = make_user()
    client.force_login(me)
    client.post(next_url(eval_set))
    annotation = Annotation.objects.get(annotator=me)
    key = Criterion.objects.filter(rubric_version=rv).first().key
    data = {"criterion": key, "outcome": "PASS", "evidence": "refund of $40.00", "rubric_version": rv.pk}
    caches["fragments"].clear()  # the first page load under a rubric version reads its criteria
    first_page = count(lambda: client.get(page_url(annotation)))
    page = count(lambda: client.get(page_url(annotation)))
    save = count(lambda: client.post(save_url(annotation), data, HTTP_HX_REQUEST="true"))
    resave = count(lambda: client.post(save_url(annotation), data, HTTP_HX_REQUEST="true"))
    answered_page = count(lambda: client.get(page_url(annotation)))
    for c in Criterion.objects.filter(rubric_version=rv):
        client.post(save_url(annotation), {**data, "criterion": c.key}, HTTP_HX_REQUEST="true")
    submit = count(lambda: client.post(submit_url(annotation), {"rubric_version": rv.pk}))
    return first_page, page, answered_page, save, resave, submit


def test_the_labeling_page_save_and_submit_do_not_grow_with_criteria_or_outputs(client):
    small = labeling_page_queries(client, **SMALL)
    large = labeling_page_queries(client, **LARGE)
    assert small[:5] == large[:5]
    # Submit then claims the next output: with nothing left (small) it stops earlier than with outputs left.
    assert large[5] - small[5] <= 6
    # Pinned, so that a change that adds a query per page load is noticed. A fresh case: the session with
    # its user and the annotation with everything around it, one statement on PostgreSQL (two elsewhere);
    # plus the criteria the first time a rubric version is shown in this process; plus the annotator's own
    # labels once there are some.
    first_page, page, answered_page, save, resave, _ = large
    one_statement = connection.vendor == "postgresql"
    assert page == (1 if one_statement else 2)
    assert first_page == answered_page == page + 1
    assert save == resave == 6


def adjudication_page_queries(client, reviewer, criteria, n_outputs):
    eval_set, rv, outputs = labeling_setup(n_outputs=n_outputs, criteria=criteria)
    a, b = make_user(), make_user()
    keys = [c.key for c in Criterion.objects.filter(rubric_version=rv)]
    for output in outputs:
        annotate_directly(output, rv, a, {k: ("PASS", "refund of $40.00") for k in keys})
        annotate_directly(output, rv, b, {k: ("FAIL", "NONE") for k in keys})
    criterion = Criterion.objects.filter(rubric_version=rv).first()
    client.force_login(reviewer)
    url = reverse("labeling:adjudicate", args=[outputs[0].pk, criterion.pk])
    page = count(lambda: client.get(url))
    queue = count(
        lambda: client.get(reverse("labeling:adjudication_queue") + f"?eval_set={eval_set.pk}&rubric_version={rv.pk}")
    )
    progress = count(
        lambda: client.get(reverse("labeling:progress") + f"?eval_set={eval_set.pk}&rubric_version={rv.pk}")
    )
    return page, queue, progress


def test_the_adjudication_page_queue_and_progress_do_not_grow_with_criteria_or_outputs(client, reviewer):
    small = adjudication_page_queries(client, reviewer, **SMALL)
    large = adjudication_page_queries(client, reviewer, **LARGE)
    assert small == large
    page, queue, progress = large
    assert page == 6  # the session with its user, then the page's own five


@pytest.mark.parametrize("page", [False, True])
def test_own_annotation_reads_what_the_orm_reads_and_only_for_its_annotator(page):
    from django.http import Http404

    from labeling.guards import own_annotation

    eval_set, rv, outputs = labeling_setup(n_outputs=1)
    second = make_output(eval_set, case_id="case-001", agent_version="v2")  # the case's answer 2 of 2
    me, other = make_user(), make_user()
    mine = annotate_directly(second, rv, me, all_answers(rv), submit=False)
    got = own_annotation(me, mine.pk, page=page)
    # The reference: the same rows through the ORM.
    expected = Annotation.objects.select_related("output__case__eval_set", "rubric_version__rubric").get(pk=mine.pk)
    pairs = [
        (got, expected),
        (got.output, expected.output),
        (got.output.case, expected.output.case),
        (got.output.case.eval_set, expected.output.case.eval_set),
        (got.rubric_version, expected.rubric_version),
        (got.rubric_version.rubric, expected.rubric_version.rubric),
    ]
    for ours, theirs in pairs:
        for field in type(theirs)._meta.concrete_fields:
            # Deferred fields (the eval set's and rubric's besides their names) load on access, with the same value.
            assert getattr(ours, field.attname) == getattr(theirs, field.attname), field
    assert got.queue_rubric_version_id == rv.pk
    if page:
        assert (got.answers, got.answer_number, got.has_labels) == (2, 2, True)
    with pytest.raises(Http404):
        own_annotation(other, mine.pk, page=page)  # the blind rule: someone else's annotation does not exist
