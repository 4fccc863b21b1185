"""Who may open what: the blind rule and the adjudication rule, checked on the server.

Views fetch through these helpers, never with a bare `get_object_or_404`:

- An annotation page, its save and submit endpoints belong to the annotation's
  annotator only. For anyone else the annotation does not exist (404), so ids
  cannot be probed; not even a lead reads another person's draft through them.
- Adjudication is for reviewers and leads who did not label the output under
  that rubric version (they would be judging their own call).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, TypedDict

from django.core.exceptions import PermissionDenied
from django.db.models import Count, Exists, OuterRef, Subquery, Value
from django.db.models.functions import Coalesce
from django.http import Http404

from evals.access import has_role
from evals.models import Criterion, Output, Role, User, Workspace
from evals.workspaces import in_workspace

from .models import Annotation, LabelingQueue

if TYPE_CHECKING:
    from django_stubs_ext import WithAnnotations


class QueueVersion(TypedDict):
    """What `own_annotation` reads beside the annotation, in the same query."""

    queue_rubric_version_id: int | None


class AnswerPosition(TypedDict):
    """What `adjudicable_item` reads beside the output: how many answers its case has, and which one it is."""

    labeled_by_me: bool
    answers: int
    answer_number: int


def own_annotation(user: User, pk: int, *, for_update: bool = False) -> WithAnnotations[Annotation, QueueVersion]:
    """The annotation with its output, case, eval set, rubric version and rubric, if `user` made it; 404 otherwise.

    The blind rule is the `annotator` condition: for anyone else the annotation does not exist.
    Also carries `queue_rubric_version_id`: the rubric version its eval set's queue uses now
    (None when the queue is closed), read in the same query. The free-form metadata of the output
    and case is left unread (it can be large JSON, and nothing here shows it).
    """
    queue = LabelingQueue.objects.current().filter(eval_set_id=OuterRef("output__case__eval_set_id"))
    qs = (
        Annotation.objects.select_related("output__case__eval_set", "rubric_version__rubric")
        .defer("output__metadata", "output__case__metadata")
        .annotate(queue_rubric_version_id=Subquery(queue.order_by().values("rubric_version_id")[:1]))
    )
    if for_update:
        # Lock only the annotation row: saves and submits of one annotation serialize, and a claim
        # cannot drop it meanwhile. NO KEY: labels being inserted for it (FK checks) are not blocked.
        qs = qs.select_for_update(of=("self",), no_key=True)
    annotation = qs.filter(pk=pk, annotator=user).first()
    if annotation is None:
        raise Http404("No such annotation of yours. If it was a draft, its reservation may have lapsed.")
    return annotation


def _count(qs) -> Coalesce:
    """COUNT(*) of a correlated queryset, as an expression (0 when it matches nothing)."""
    counted = qs.order_by().annotate(_one=Value(1)).values("_one").annotate(n=Count("*")).values("n")
    return Coalesce(Subquery(counted[:1]), 0)


def may_adjudicate(user: User, workspace: Workspace | int | None) -> bool:
    return has_role(user, workspace, Role.REVIEWER, Role.LEAD)


def adjudicable_item(
    user: User, workspace: Workspace, output_id: int, criterion_id: int
) -> tuple[WithAnnotations[Output, AnswerPosition], Criterion]:
    """The (output, criterion) of `workspace` a reviewer may decide; 404 if unknown (or another workspace's),
    403 if they labeled it."""
    if not may_adjudicate(user, workspace):
        raise PermissionDenied("Adjudication is for reviewers and leads.")
    criterion = (
        in_workspace(Criterion, workspace).select_related("rubric_version__rubric").filter(pk=criterion_id).first()
    )
    if criterion is None:
        raise Http404("No such item.")
    mine = Annotation.objects.filter(
        output_id=OuterRef("pk"), rubric_version_id=criterion.rubric_version_id, annotator=user
    )
    siblings = Output.objects.filter(case_id=OuterRef("case_id"))
    output = (
        in_workspace(Output, workspace)
        .select_related("case__eval_set")
        .annotate(
            labeled_by_me=Exists(mine),
            answers=_count(siblings),
            answer_number=_count(siblings.filter(pk__lte=OuterRef("pk"))),
        )
        .filter(pk=output_id)
        .first()
    )
    if output is None:
        raise Http404("No such item.")
    if output.labeled_by_me:
        raise PermissionDenied("You labeled this output, so another reviewer must adjudicate it.")
    return output, criterion
