"""What waits for a reviewer (and a lead, who adjudicates too) on Home: disagreements and disputed gold labels.

Per eval set and rubric version with work (the open labeling queues, and wherever a gold label is disputed):
how many items wait, how many of them are disputes, and since when the oldest waits (a disagreement waits
from the later of its two submissions, a dispute from when it was raised). Only items this person may
decide are counted (labeling.adjudicate.pending_items leaves out outputs they labeled). A fixed number of
queries per scope; the scopes are the few open queues. Of those items, the ones an open audit plan has released
are counted per plan (two queries in all, one when no plan is open): their gold is a release decision's.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from django.db.models import Max
from django.urls import reverse
from django.utils.http import urlencode

from calibration.models import AuditPlan
from evals.models import EvalSet, RubricVersion, User
from labeling.adjudicate import pending_items
from labeling.models import Annotation, AuditOrderItem, GoldDispute, LabelingQueue


@dataclass(frozen=True)
class AdjudicationsWaiting:
    eval_set: EvalSet
    rubric_version: RubricVersion
    waiting: int  # everything this person may decide here, disputes included
    disputes: int
    oldest: datetime | None
    queue_url: str  # the adjudication queue of this eval set and rubric version
    oldest_url: str  # the adjudication page of the item that has waited longest
    # (plan id, how many of the waiting items that open audit plan has released), by plan id
    audits: tuple[tuple[int, int], ...] = ()

    @property
    def disagreements(self) -> int:
        return self.waiting - self.disputes


def _scopes() -> list[tuple[EvalSet, RubricVersion]]:
    queues = LabelingQueue.objects.current().select_related("eval_set", "rubric_version__rubric")
    scopes = {(q.eval_set_id, q.rubric_version_id): (q.eval_set, q.rubric_version) for q in queues}
    disputed = GoldDispute.objects.open().order_by()
    missing = set(disputed.values_list("output__case__eval_set_id", "rubric_version_id").distinct()) - set(scopes)
    if missing:  # disputes outside the open queues (two more queries)
        eval_sets = EvalSet.objects.in_bulk({es for es, _ in missing})
        versions = RubricVersion.objects.select_related("rubric").in_bulk({rv for _, rv in missing})
        scopes.update({(es, rv): (eval_sets[es], versions[rv]) for es, rv in missing})
    return sorted(scopes.values(), key=lambda s: (s[0].name, s[1].ref))


def _audited_items() -> dict[tuple[int, int], list[int]]:
    """(criterion id, output id) -> the open audit plans that have released that output and audit that criterion."""
    plans = list(AuditPlan.objects.open().values_list("pk", "criterion_id", "order_id", "agent_version"))
    if not plans:
        return {}
    released = AuditOrderItem.objects.filter(
        order_id__in={order for _, _, order, _ in plans}, released=True
    ).values_list("order_id", "output_id", "output__agent_version")
    outputs: dict[int, list[tuple[int, str]]] = {}
    for order, output, agent_version in released:
        outputs.setdefault(order, []).append((output, agent_version))
    held: dict[tuple[int, int], list[int]] = {}
    for plan, criterion, order, agent_version in plans:
        for output, version in outputs.get(order, []):
            if not agent_version or version == agent_version:
                held.setdefault((criterion, output), []).append(plan)
    return held


def _audit_counts(items, held: dict[tuple[int, int], list[int]]) -> tuple[tuple[int, int], ...]:
    counts: dict[int, int] = {}
    for i in items:
        for plan in held.get((i.criterion_id, i.output_id), []):
            counts[plan] = counts.get(plan, 0) + 1
    return tuple(sorted(counts.items()))


def adjudications_waiting(user: User) -> list[AdjudicationsWaiting]:
    out = []
    held: dict[tuple[int, int], list[int]] | None = None
    for eval_set, rubric_version in _scopes():
        items = pending_items(eval_set, rubric_version, user)
        if not items:
            continue
        if held is None:  # read once, and only when something waits
            held = _audited_items()
        since = _since(rubric_version, items)
        dated = [(when, i) for i in items if (when := since.get((i.criterion_id, i.output_id))) is not None]
        first = min(dated, key=lambda pair: pair[0]) if dated else (None, items[0])
        query = urlencode({"eval_set": eval_set.pk, "rubric_version": rubric_version.pk})
        out.append(
            AdjudicationsWaiting(
                eval_set=eval_set,
                rubric_version=rubric_version,
                waiting=len(items),
                disputes=sum(1 for i in items if i.dispute_reason),
                oldest=first[0],
                queue_url=f"{reverse('labeling:adjudication_queue')}?{query}",
                oldest_url=reverse("labeling:adjudicate", args=[first[1].output_id, first[1].criterion_id]),
                audits=_audit_counts(items, held),
            )
        )
    return out


def _since(rubric_version: RubricVersion, items) -> dict[tuple[int, int], datetime | None]:
    """When each item started to wait (two queries)."""
    outputs = {i.output_id for i in items}
    submitted = dict(
        Annotation.objects.submitted()
        .filter(output_id__in=outputs, rubric_version=rubric_version)
        .values("output_id")
        .annotate(last=Max("submitted_at"))
        .order_by()
        .values_list("output_id", "last")
    )
    open_disputes = (
        GoldDispute.objects.open()
        .filter(rubric_version=rubric_version, output_id__in=outputs)
        .only("criterion_id", "output_id", "raised_at")
    )
    disputes = {(d.criterion_id, d.output_id): d.raised_at for d in open_disputes}
    return {
        (i.criterion_id, i.output_id): disputes.get((i.criterion_id, i.output_id)) or submitted.get(i.output_id)
        for i in items
    }
