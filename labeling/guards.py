"""Who may open what: the blind rule and the adjudication rule, checked on the server.

Views fetch through these helpers, never with a bare `get_object_or_404`:

- An annotation page, its save and submit endpoints belong to the annotation's
  annotator only. For anyone else the annotation does not exist (404), so ids
  cannot be probed; not even a lead reads another person's draft through them.
- Adjudication is for reviewers and leads who did not label the output under
  that rubric version (they would be judging their own call).
"""

from __future__ import annotations

from functools import partial
from typing import TYPE_CHECKING, TypedDict

from django.core.exceptions import PermissionDenied
from django.db.models import Count, Exists, OuterRef, QuerySet, Subquery, Value
from django.db.models.functions import Coalesce
from django.http import Http404

from evals.access import has_role
from evals.models import Criterion, Output, Role, User, Workspace
from evals.workspaces import in_workspace

from .compiled_query import CompiledQuery
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


def own_annotation(
    user: User, workspace: Workspace, pk: int, *, for_update: bool = False
) -> WithAnnotations[Annotation, QueueVersion]:
    """The annotation with its output, case, eval set, rubric version and rubric, if `user` made it in
    `workspace`; 404 otherwise.

    The blind rule is the `annotator` condition: for anyone else the annotation does not exist. The workspace
    condition keeps a person to the workspace they work in (an annotator in A who leads B labels in A only).
    Also carries `queue_rubric_version_id`: the rubric version its eval set's queue uses now
    (None when the queue is closed), read in the same query. The free-form metadata of the output
    and case is left unread (it can be large JSON, and nothing here shows it).

    The labeling page and every save run it, so its SQL is compiled once (compiled_query.py): compiling this join
    was a third of a save's CPU.
    """
    query = _OWN_ANNOTATION_LOCKED if for_update else _OWN_ANNOTATION
    found = query.rows(workspace_id=workspace.pk, pk=pk, annotator_id=user.pk)
    if not found:
        raise Http404("No such annotation of yours. If it was a draft, its reservation may have lapsed.")
    return found[0]


def _own_annotation_query(*, workspace_id: int, pk: int, annotator_id: int, for_update: bool) -> QuerySet[Annotation]:
    queue = LabelingQueue.objects.current().filter(eval_set_id=OuterRef("output__case__eval_set_id"))
    qs = (
        in_workspace(Annotation, workspace_id)
        .select_related("output__case__eval_set", "rubric_version__rubric")
        .defer("output__metadata", "output__case__metadata")
        .annotate(queue_rubric_version_id=Subquery(queue.order_by().values("rubric_version_id")[:1]))
    )
    if for_update:
        # Lock only the annotation row: saves and submits of one annotation serialize, and a claim
        # cannot drop it meanwhile. NO KEY: labels being inserted for it (FK checks) are not blocked.
        qs = qs.select_for_update(of=("self",), no_key=True)
    return qs.filter(pk=pk, annotator_id=annotator_id)


_NAMES = ("workspace_id", "pk", "annotator_id")
_OWN_ANNOTATION: CompiledQuery[WithAnnotations[Annotation, QueueVersion]] = CompiledQuery(
    partial(_own_annotation_query, for_update=False), *_NAMES
)
_OWN_ANNOTATION_LOCKED: CompiledQuery[WithAnnotations[Annotation, QueueVersion]] = CompiledQuery(
    partial(_own_annotation_query, for_update=True), *_NAMES
)


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
