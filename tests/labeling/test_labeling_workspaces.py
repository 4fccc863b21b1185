"""The labeling pages keep workspaces apart (issue #36): another workspace's ids answer as missing ones, lists and
forms hold one workspace's rows, and a person's role is the one they hold in the workspace they work in."""

from __future__ import annotations

import pytest
from django.urls import reverse

from evals.models import Role
from labeling.models import Annotation, LabelingQueue
from tests.factories import all_answers, annotate_directly, make_rubric_version, set_role
from tests.two_workspaces import MISSING, answer, options, same_as_missing, signed_in

pytestmark = pytest.mark.django_db


def _both(name: str, other_id, *more) -> tuple[str, str]:
    return reverse(name, args=[other_id, *more]), reverse(name, args=[MISSING, *more][: 1 + len(more)])


def test_annotation_pages_of_another_workspace_answer_as_missing_even_for_their_own_annotator(sides):
    a, b = sides
    # One person annotates in both teams and has a draft in each; working in alpha, beta's draft is not there.
    both = b.annotator
    set_role(both, Role.ANNOTATOR, a.workspace)
    client = signed_in(both, a.workspace)
    other = b.draft.pk
    for method, name, data in (
        ("get", "labeling:annotate", None),
        ("post", "labeling:save_label", {"criterion": "correct_amount", "outcome": "PASS"}),
        ("post", "labeling:submit", {"rubric_version": b.rubric_version.pk}),
    ):
        status, _ = same_as_missing(client, method, reverse(name, args=[other]), reverse(name, args=[MISSING]), data)
        assert status == 404
    status, body = same_as_missing(
        client,
        "post",
        reverse("labeling:save_label", args=[other]),
        reverse("labeling:save_label", args=[MISSING]),
        {"criterion": "correct_amount", "outcome": "PASS"},
        htmx=True,
    )
    assert status == 404 and b"no longer reserved" in body
    assert Annotation.objects.get(pk=other).status == Annotation.Status.DRAFT  # nothing submitted
    # Negative control: in beta, the same person's draft opens.
    assert signed_in(both, b.workspace).get(reverse("labeling:annotate", args=[other])).status_code == 200


def test_next_on_another_workspaces_eval_set_is_as_on_one_without_a_queue(sides):
    a, b = sides
    client = signed_in(a.annotator, a.workspace)
    url, missing = _both("labeling:next", b.eval_set.pk)
    status, _ = same_as_missing(client, "post", url, missing)
    assert status == 302
    assert not Annotation.objects.filter(annotator=a.annotator, output__case__eval_set=b.eval_set).exists()
    # Negative control: alpha's own queue hands out an output (the draft already held: it resumes).
    response = client.post(reverse("labeling:next", args=[a.eval_set.pk]))
    assert response.status_code == 302 and response.url == reverse("labeling:annotate", args=[a.draft.pk])


def test_queues_page_lists_only_its_workspace_and_a_move_cannot_name_the_other(sides):
    a, b = sides
    client = signed_in(a.lead, a.workspace)
    body = client.get(reverse("labeling:queues")).content.decode()
    assert reverse("labeling:queue_move", args=[a.eval_set.pk]) in body
    assert reverse("labeling:queue_move", args=[b.eval_set.pk]) not in body
    assert options(body, "rubric_version") == {str(a.rubric_version.pk)}
    url, missing = _both("labeling:queue_move", b.eval_set.pk)
    status, _ = same_as_missing(client, "post", url, missing, {"rubric_version": a.rubric_version.pk})
    assert status == 404
    # alpha's eval set moved to beta's rubric version: an invalid choice, as for a version that does not exist.
    own = reverse("labeling:queue_move", args=[a.eval_set.pk])
    got = answer(client, "post", own, {"rubric_version": b.rubric_version.pk})
    assert got == answer(client, "post", own, {"rubric_version": MISSING}) and got[0] == 422
    assert LabelingQueue.objects.get(eval_set=a.eval_set, is_current=True).rubric_version == a.rubric_version
    # Negative control: a version of alpha moves it.
    newer = make_rubric_version("refund-support", version="2", workspace=a.workspace)
    assert client.post(own, {"rubric_version": newer.pk}).status_code == 302
    assert LabelingQueue.objects.get(eval_set=a.eval_set, is_current=True).rubric_version == newer


def test_adjudication_of_another_workspaces_item_answers_as_missing(sides):
    a, b = sides
    client = signed_in(a.reviewer, a.workspace)
    criterion = b.rubric_version.criteria.get(key="correct_amount")
    own_criterion = a.rubric_version.criteria.get(key="correct_amount")
    pairs = [
        ((b.outputs[1].pk, criterion.pk), (MISSING, criterion.pk)),
        ((b.outputs[1].pk, own_criterion.pk), (MISSING, own_criterion.pk)),
        ((a.outputs[1].pk, criterion.pk), (a.outputs[1].pk, MISSING)),
    ]
    post = {"outcome": "PASS", "rationale": "because", "based_on": 0}
    for other, missing in pairs:
        for method, data in (("get", None), ("post", post)):
            url = reverse("labeling:adjudicate", args=other)
            status, _ = same_as_missing(client, method, url, reverse("labeling:adjudicate", args=missing), data)
            assert status == 404
    assert not b.outputs[1].gold_labels.exists()
    # Negative control: alpha's own disagreement opens.
    assert client.get(reverse("labeling:adjudicate", args=[a.outputs[1].pk, own_criterion.pk])).status_code == 200


def test_adjudication_queue_and_my_work_show_only_the_workspace_in_use(sides):
    a, b = sides
    client = signed_in(a.reviewer, a.workspace)
    queue = reverse("labeling:adjudication_queue")
    body = client.get(queue).content.decode()
    assert reverse("labeling:adjudicate", args=[a.outputs[1].pk, a.rubric_version.criteria.first().pk]) in body
    assert reverse("labeling:adjudicate", args=[b.outputs[1].pk, b.rubric_version.criteria.first().pk]) not in body
    # beta's ids in the address are ignored, as unknown ones are.
    other = f"{queue}?eval_set={b.eval_set.pk}&rubric_version={b.rubric_version.pk}"
    assert same_as_missing(client, "get", other, f"{queue}?eval_set={MISSING}&rubric_version={MISSING}")[0] == 200
    # My work: a person annotating in both sees the workspace in use only.
    both = b.annotator
    set_role(both, Role.ANNOTATOR, a.workspace)
    mine = annotate_directly(a.outputs[2], a.rubric_version, both, all_answers(a.rubric_version))
    page = signed_in(both, a.workspace).get(reverse("labeling:my_work")).content.decode()
    assert reverse("labeling:annotate", args=[mine.pk]) in page
    assert reverse("labeling:annotate", args=[b.draft.pk]) not in page
    page = signed_in(both, b.workspace).get(reverse("labeling:my_work")).content.decode()  # negative control
    assert reverse("labeling:annotate", args=[b.draft.pk]) in page
    assert reverse("labeling:annotate", args=[mine.pk]) not in page


def test_rubric_pages_of_another_workspace_answer_as_missing(sides):
    a, b = sides
    client = signed_in(a.lead, a.workspace)
    for name, method, data in (
        ("labeling:rubric_version", "get", None),
        ("labeling:rubric_edit", "get", None),
        ("labeling:rubric_edit", "post", {"version": "9"}),
    ):
        url, missing = _both(name, b.rubric_version.pk)
        assert same_as_missing(client, method, url, missing, data)[0] == 404
    body = client.get(reverse("labeling:rubric_version", args=[a.rubric_version.pk])).content.decode()
    assert reverse("overview:eval_set", args=[b.eval_set.pk]) not in body


def test_roles_are_the_workspace_in_uses(sides):
    """An annotator of alpha who leads beta labels in alpha only, and leads in beta only."""
    a, b = sides
    person = a.annotator
    set_role(person, Role.LEAD, b.workspace)
    in_alpha, in_beta = signed_in(person, a.workspace), signed_in(person, b.workspace)
    assert in_alpha.get(reverse("labeling:queues")).status_code == 403
    assert in_beta.get(reverse("labeling:queues")).status_code == 200
    assert in_alpha.get(reverse("labeling:annotate", args=[a.draft.pk])).status_code == 200
    assert in_beta.get(reverse("labeling:annotate", args=[a.draft.pk])).status_code == 403  # a lead labels nothing
    assert in_beta.post(reverse("labeling:next", args=[b.eval_set.pk])).status_code == 403
    home = in_alpha.get(reverse("home")).content.decode()
    assert reverse("labeling:annotate", args=[a.draft.pk]) in home  # alpha's queue, with the draft to continue
    assert reverse("labeling:next", args=[b.eval_set.pk]) not in home
    # The same address, switched with ?workspace=: the role follows the workspace named.
    assert in_alpha.get(reverse("labeling:queues") + f"?workspace={b.workspace.slug}").status_code == 200
