"""What each annotator has to do: their open queues, drafts and what is left (nothing about anyone else's labels).

The staff view of progress, with the human-human agreement, is overview/labeling_progress.py.
"""

from __future__ import annotations

from dataclasses import dataclass

from django.db.models import Count

from evals.models import EvalSet, RubricVersion, User

from .models import Annotation, LabelingQueue
from .queue import open_draft, released_by_queue, remaining_for


def versions_with_work(eval_set: EvalSet, also: RubricVersion | None = None) -> list[RubricVersion]:
    """Rubric versions this eval set has annotations or a queue under (for the version picker)."""
    ids = {also.pk} if also else set()
    ids |= set(
        Annotation.objects.filter(output__case__eval_set=eval_set).values_list("rubric_version_id", flat=True)
    ) | set(LabelingQueue.objects.filter(eval_set=eval_set).values_list("rubric_version_id", flat=True))
    return list(
        RubricVersion.objects.filter(pk__in=ids).select_related("rubric").order_by("rubric__name", "created_at")
    )


@dataclass(frozen=True)
class MyQueue:
    queue: LabelingQueue
    submitted: int
    draft: Annotation | None
    remaining: int


def my_queues(user: User) -> list[MyQueue]:
    """For each open queue: what this person submitted, their open draft, and how much is left for them."""
    out = []
    queues = list(LabelingQueue.objects.current().select_related("eval_set", "rubric_version__rubric"))
    audits = released_by_queue(queues)
    rows = (
        Annotation.objects.submitted()
        .filter(annotator=user)
        .values_list("output__case__eval_set_id", "rubric_version_id")
        .annotate(n=Count("id"))
        .order_by()
    )
    submitted = {(es, rv): n for es, rv, n in rows}
    for queue in queues:
        out.append(
            MyQueue(
                queue=queue,
                submitted=submitted.get((queue.eval_set_id, queue.rubric_version_id), 0),
                draft=open_draft(user, queue),
                remaining=remaining_for(user, queue, audits),
            )
        )
    return out
