"""The labeling page, the save endpoint, submit and the adjudication page run a bounded number of SQL queries,
whatever the number of criteria or outputs (2 vs 6 criteria, 1 vs 30 outputs with other people's labels)."""

from __future__ import annotations

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.urls import reverse

from evals.models import Criterion
from labeling.models import Annotation
from tests.factories import all_answers, annotate_directly, default_workspace, labeling_setup, make_user, six_criteria
from tests.labeling_helpers import next_url, page_url, save_url, submit_url

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
    page = count(lambda: client.get(page_url(annotation)))
    save = count(lambda: client.post(save_url(annotation), data, HTTP_HX_REQUEST="true"))
    resave = count(lambda: client.post(save_url(annotation), data, HTTP_HX_REQUEST="true"))
    answered_page = count(lambda: client.get(page_url(annotation)))
    for c in Criterion.objects.filter(rubric_version=rv):
        client.post(save_url(annotation), {**data, "criterion": c.key}, HTTP_HX_REQUEST="true")
    submit = count(lambda: client.post(submit_url(annotation), {"rubric_version": rv.pk}))
    return page, answered_page, save, resave, submit


# Upper bounds, so a change that adds a query per criterion or output is noticed (the small and large worlds
# must agree), while one more field or join is not a test change. The page: its user (the session is read from
# Redis, cached_db: config/settings.py), their memberships, the annotation with everything around it, the criteria
# with the annotator's labels, the output's name.
PAGE_AT_MOST = 5
# A save: its user, their memberships, then in one transaction (a savepoint here) the annotation locked, its
# criteria with their current labels, the write. Each query is a round trip that waits for a CPU on a busy server;
# it read the annotation and the label twice (outside the lock and in it), and the session from the database,
# until the 100-person bench (bench/labeling_load.py --crowd 100) showed saves waiting on those round trips.
SAVE_AT_MOST = 7
# The submit itself, then Next reserving the following output; after the commit, one UPDATE marks the eval set's
# stored calibration reports stale (none stored for a small set: the UPDATE finds no row; issue 37).
SUBMIT_AT_MOST = 20


def test_the_labeling_page_save_and_submit_do_not_grow_with_criteria_or_outputs(client):
    small = labeling_page_queries(client, **SMALL)
    large = labeling_page_queries(client, **LARGE)
    assert small[:4] == large[:4]
    # Submit then claims the next output: with nothing left (small) it stops earlier than with outputs left.
    assert large[4] - small[4] <= 6
    page, answered_page, save, resave, submit = large
    assert page <= PAGE_AT_MOST and answered_page <= PAGE_AT_MOST
    assert save <= SAVE_AT_MOST and resave <= SAVE_AT_MOST
    assert submit <= SUBMIT_AT_MOST


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
    client.get(url)  # the session's first request stores the workspace chosen for it (#36): not a page's cost
    page = count(lambda: client.get(url))
    queue = count(
        lambda: client.get(reverse("labeling:adjudication_queue") + f"?eval_set={eval_set.pk}&rubric_version={rv.pk}")
    )
    progress = count(
        lambda: client.get(reverse("overview:progress") + f"?eval_set={eval_set.pk}&rubric_version={rv.pk}")
    )
    return page, queue, progress


def test_the_adjudication_page_queue_and_progress_do_not_grow_with_criteria_or_outputs(client, reviewer):
    small = adjudication_page_queries(client, reviewer, **SMALL)
    large = adjudication_page_queries(client, reviewer, **LARGE)
    assert small == large
    page, queue, progress = large
    assert page <= 9  # the session, its user, the person's workspace memberships (#36), then the page's own


def test_own_annotation_reads_everything_around_it_in_one_query_and_only_for_its_annotator(
    django_assert_num_queries,
):
    from django.http import Http404

    from labeling.guards import own_annotation

    eval_set, rv, outputs = labeling_setup(n_outputs=1)
    me, other = make_user(), make_user()
    mine = annotate_directly(outputs[0], rv, me, all_answers(rv), submit=False)
    workspace = default_workspace()
    with django_assert_num_queries(1):
        got = own_annotation(me, workspace, mine.pk)
        seen = (got.output.response, got.output.case.case_id, got.output.case.eval_set.name, got.rubric_version.ref)
    assert seen == (outputs[0].response, "case-001", eval_set.name, rv.ref)
    assert got.queue_rubric_version_id == rv.pk
    with django_assert_num_queries(1):  # a deferred column still loads when something asks for it
        assert got.output.metadata == {}
    with pytest.raises(Http404):
        own_annotation(other, workspace, mine.pk)  # the blind rule: someone else's annotation does not exist
