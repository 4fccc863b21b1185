"""Home, progress and the eval set and output pages keep workspaces apart (issue #36)."""

from __future__ import annotations

import pytest
from django.urls import reverse

from evals.models import RubricVersion
from overview.lead_inbox import lead_inbox
from overview.review_inbox import adjudications_waiting
from tests.two_workspaces import MISSING, options, same_as_missing, signed_in

pytestmark = pytest.mark.django_db


def test_eval_set_and_output_pages_of_another_workspace_answer_as_missing(sides):
    a, b = sides
    client = signed_in(a.reviewer, a.workspace)
    for name, other in (("overview:eval_set", b.eval_set.pk), ("overview:output", b.outputs[0].pk)):
        status, _ = same_as_missing(client, "get", reverse(name, args=[other]), reverse(name, args=[MISSING]))
        assert status == 404
    # alpha's output asked under beta's rubric version: as for a version that does not exist.
    page = reverse("overview:output", args=[a.outputs[1].pk])
    status, body = same_as_missing(
        client, "get", f"{page}?rubric_version={b.rubric_version.pk}", f"{page}?rubric_version={MISSING}"
    )
    assert status == 200 and b"beta answer" not in body
    # The eval set page's rubric version filter offers alpha's versions only.
    body = client.get(reverse("overview:eval_set", args=[a.eval_set.pk])).content.decode()
    assert options(body, "rubric_version") == {str(a.rubric_version.pk)}
    assert reverse("overview:output", args=[a.outputs[0].pk]) in body
    assert reverse("overview:output", args=[b.outputs[0].pk]) not in body


def test_progress_takes_no_ids_of_another_workspace(sides):
    a, b = sides
    client = signed_in(a.lead, a.workspace)
    page = reverse("overview:progress")
    other = f"{page}?eval_set={b.eval_set.pk}&rubric_version={b.rubric_version.pk}"
    status, body = same_as_missing(client, "get", other, f"{page}?eval_set={MISSING}&rubric_version={MISSING}")
    assert status == 200
    assert options(body, "eval_set") == {str(a.eval_set.pk)}
    assert options(body, "rubric_version") == {str(a.rubric_version.pk)}


def test_home_of_a_lead_lists_and_counts_only_the_workspace_in_use(sides):
    a, b = sides
    RubricVersion.objects.filter(pk__in=[a.rubric_version.pk, b.rubric_version.pk]).update(status="draft")
    body = signed_in(a.lead, a.workspace).get(reverse("home")).content.decode()
    for url in (
        reverse("labeling:rubric_version", args=[a.rubric_version.pk]),
        reverse("overview:eval_set", args=[a.eval_set.pk]),
    ):
        assert url in body
    for url in (
        reverse("labeling:rubric_version", args=[b.rubric_version.pk]),
        reverse("overview:eval_set", args=[b.eval_set.pk]),
        reverse("labeling:adjudicate", args=[b.outputs[1].pk, b.rubric_version.criteria.first().pk]),
    ):
        assert url not in body
    # The inboxes themselves: one draft, one scope of waiting adjudications (two criteria of one output) each.
    drafts = {s.kind: s for s in lead_inbox(a.workspace)}["draft"]
    assert [line.url for line in drafts.lines] == [reverse("labeling:rubric_version", args=[a.rubric_version.pk])]
    (waiting,) = adjudications_waiting(a.reviewer, a.workspace)
    assert (waiting.eval_set, waiting.waiting) == (a.eval_set, 2)
    # Negative control: beta's lead sees beta's.
    (theirs,) = adjudications_waiting(b.reviewer, b.workspace)
    assert theirs.eval_set == b.eval_set
