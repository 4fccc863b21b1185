"""The labeling queue: which rubric version an eval set is labeled under, and "Next".

Every output needs two independent annotations (slot 1 = annotator A, slot 2 =
annotator B). "Next" hands an annotator an output they have not labeled whose two
slots are not both taken, and reserves a slot for them for RESERVATION. Saving
renews the reservation, so only idle time counts; once it lapses the slot may go
to someone else, and the abandoned draft is dropped when it does.

Concurrency: candidate outputs are locked with SELECT ... FOR UPDATE SKIP LOCKED,
so two annotators clicking Next at the same moment walk past each other's row
instead of queueing on it; the slot is re-read after the lock, and the unique
constraints on Annotation (one per slot, one per annotator) are the last word.

A queue with an audit order (labeling/audit_order.py) hands out only the order's released outputs,
lowest position first, and never skips one: the annotator gets the lowest released position that still has a
free slot and that they have not labeled. Slots, reservations and SKIP LOCKED work as above.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import timedelta

from django.db import IntegrityError, transaction
from django.db.models import Exists, OuterRef, Q, QuerySet
from django.utils import timezone

from evals.models import EvalSet, Output, RubricVersion, User, Workspace
from evals.workspaces import in_workspace, workspace_id_of

from .models import Annotation, AuditOrder, LabelingQueue

# How long "Next" holds a slot for an annotator. A careful read of a long support
# transcript with six criteria takes 2-15 minutes, and every save extends the hold,
# so 30 minutes of *idle* time means the person walked away (lunch, meeting); the
# slot then returns to the pool within the same working session.
RESERVATION = timedelta(minutes=30)

# A save extends the reservation only when it has run down by more than this: the hold then
# never drops below RESERVATION minus a minute while someone works, and most saves skip a write.
RESERVATION_REFRESH = timedelta(minutes=1)

# Slots filled in the app. Imports may add slots 3+, which never block the queue.
APP_SLOTS = (1, 2)

# A candidate can turn out full after its lock is taken (someone committed between
# our snapshot and the lock). Trying a few more rows before giving up keeps Next
# correct without ever waiting on another annotator's lock.
MAX_CLAIM_ATTEMPTS = 8


class QueueError(Exception):
    """A queue action that cannot be done; the message is shown to the user as is."""


@dataclass(frozen=True)
class Claim:
    annotation: Annotation
    resumed: bool  # True when Next returned the annotator's own open draft


def current_queue(eval_set: EvalSet | int, workspace: Workspace | int | None = None) -> LabelingQueue | None:
    """The eval set's open queue; with `workspace`, None also when the eval set is another workspace's (an id
    taken from a page's address is then exactly as unknown as a missing one)."""
    eval_set_id = eval_set if isinstance(eval_set, int) else eval_set.pk
    queues = LabelingQueue.objects.current()
    if workspace is not None:
        queues = in_workspace(queues, workspace)
    return queues.select_related("rubric_version__rubric", "eval_set").filter(eval_set_id=eval_set_id).first()


def open_queues(workspace: Workspace | int) -> QuerySet[LabelingQueue]:
    """The open queues of `workspace`."""
    return in_workspace(LabelingQueue.objects.current(), workspace).select_related("eval_set", "rubric_version__rubric")


def movable_versions(workspace: Workspace | int) -> QuerySet[RubricVersion]:
    """Rubric versions of `workspace` a queue may use: not retired and with at least one criterion."""
    return (
        in_workspace(RubricVersion, workspace)
        .exclude(status=RubricVersion.Status.RETIRED)
        .filter(criteria__isnull=False)
        .distinct()
        .select_related("rubric")
        .order_by("rubric__name", "created_at")
    )


def move_queue(*, eval_set: EvalSet, rubric_version: RubricVersion, by: User, reason: str = "") -> LabelingQueue:
    """Open the eval set's queue under `rubric_version`, or move it there.

    Labels already made keep their version; drafts under the old version can no
    longer be saved or submitted (they are kept, not deleted).
    """
    if workspace_id_of(rubric_version) != eval_set.workspace_id:
        # Pages only offer their workspace's versions; this keeps a command or a forged post from crossing.
        raise QueueError(f"{rubric_version.ref} is not a rubric of {eval_set.name}'s workspace.")
    if rubric_version.status == RubricVersion.Status.RETIRED:
        raise QueueError(f"{rubric_version.ref} is retired; choose a draft or approved version.")
    if not rubric_version.criteria.exists():
        raise QueueError(f"{rubric_version.ref} has no criteria to label.")
    with transaction.atomic():
        # Lock the eval set row so two leads moving the queue at once serialize.
        EvalSet.objects.select_for_update(no_key=True).filter(pk=eval_set.pk).first()
        current = LabelingQueue.objects.current().filter(eval_set=eval_set).first()
        if current and current.rubric_version_id == rubric_version.pk:
            raise QueueError(f"The queue of {eval_set.name} already uses {rubric_version.ref}.")
        if current:
            current.is_current = False
            current.save(update_fields=["is_current"])
        return LabelingQueue.objects.create(
            eval_set=eval_set, rubric_version=rubric_version, opened_by=by, reason=reason.strip()
        )


def _live(now) -> Q:
    """An annotation that holds its slot: submitted, or a draft whose reservation has not lapsed."""
    return Q(status=Annotation.Status.SUBMITTED) | Q(reserved_until__gt=now) | Q(reserved_until__isnull=True)


@dataclass(frozen=True)
class Released:
    """What Next may hand out of a queue's audit order: its first `released` positions."""

    order_id: int
    released: int


def released_of(queue: LabelingQueue) -> Released | None:
    """The queue's audit order as Next reads it (one query), or None when it has none."""
    row = AuditOrder.objects.filter(queue_id=queue.pk).values_list("pk", "released").first()
    return Released(*row) if row else None


def _candidates(
    eval_set_id: int, rubric_version_id: int, user: User, now, tried: list[int], audit: Released | None = None
) -> QuerySet[Output]:
    mine = Annotation.objects.filter(output=OuterRef("pk"), rubric_version_id=rubric_version_id, annotator=user)
    live = Annotation.objects.filter(output=OuterRef("pk"), rubric_version_id=rubric_version_id).filter(_live(now))
    outputs = Output.objects.filter(case__eval_set_id=eval_set_id)
    if audit is None:
        ordering = "pk"
    else:
        # Only released outputs, lowest position first: an audit's sample must be what it released.
        outputs = outputs.filter(audit_positions__order_id=audit.order_id, audit_positions__released=True)
        ordering = "audit_positions__position"
    return (
        outputs.exclude(pk__in=tried)
        .exclude(Exists(mine))
        .exclude(Exists(live.filter(slot=1)) & Exists(live.filter(slot=2)))
        .order_by(ordering)
    )


def open_draft(user: User, queue: LabelingQueue) -> Annotation | None:
    """The annotator's unfinished annotation in this queue, if any (Next resumes it)."""
    return (
        Annotation.objects.filter(
            annotator=user,
            rubric_version_id=queue.rubric_version_id,
            status=Annotation.Status.DRAFT,
            output__case__eval_set_id=queue.eval_set_id,
        )
        .select_related("output__case")
        .order_by("created_at")
        .first()
    )


def claim_next(*, user: User, queue: LabelingQueue) -> Claim | None:
    """Resume the annotator's open draft or reserve a free slot; None when nothing is left for them."""
    with transaction.atomic():
        # One Next at a time per person: a double click must not reserve two outputs.
        User.objects.select_for_update(no_key=True).filter(pk=user.pk).first()
        draft = open_draft(user, queue)
        if draft is not None:
            draft.reserved_until = timezone.now() + RESERVATION
            draft.save(update_fields=["reserved_until"])
            return Claim(annotation=draft, resumed=True)
        audit = released_of(queue)
        tried: list[int] = []
        for _ in range(MAX_CLAIM_ATTEMPTS):
            now = timezone.now()
            candidates = _candidates(queue.eval_set_id, queue.rubric_version_id, user, now, tried, audit)
            output_id = (
                candidates.select_for_update(skip_locked=True, of=("self",), no_key=True)
                .values_list("pk", flat=True)
                .first()
            )
            if output_id is None:
                # Every candidate may just be locked by someone else's Next: wait for those
                # locks once rather than say "nothing left" while slots may still be free.
                output_id = candidates.select_for_update(of=("self",), no_key=True).values_list("pk", flat=True).first()
            if output_id is None:
                return None
            annotation = _take_slot(output_id, queue.rubric_version_id, user, now)
            if annotation is not None:
                return Claim(annotation=annotation, resumed=False)
            tried.append(output_id)
        return None


def _take_slot(output_id: int, rubric_version_id: int, user: User, now) -> Annotation | None:
    """With the output row locked, re-read its slots (a fresh snapshot) and take the first free one."""
    annotations = list(Annotation.objects.filter(output_id=output_id, rubric_version_id=rubric_version_id))
    if any(a.annotator_id == user.pk for a in annotations):
        return None  # labeled it already (e.g. in an imported slot)
    held = {a.slot: a for a in annotations}
    for slot in APP_SLOTS:
        existing = held.get(slot)
        if existing is not None:
            if not _is_lapsed(existing, now):
                continue
            # Lock the lapsed draft before dropping it. SKIP LOCKED: if its owner is
            # saving right now, the save extends the hold, so the slot is not free.
            # PostgreSQL re-checks the condition on the locked row version.
            lapsed = (
                Annotation.objects.select_for_update(skip_locked=True)
                .filter(pk=existing.pk, status=Annotation.Status.DRAFT, reserved_until__lte=now)
                .first()
            )
            if lapsed is None:
                continue
            lapsed.delete()
        try:
            with transaction.atomic():
                return Annotation.objects.create(
                    output_id=output_id,
                    rubric_version_id=rubric_version_id,
                    annotator=user,
                    slot=slot,
                    reserved_until=now + RESERVATION,
                )
        except IntegrityError:
            continue
    return None


def _is_lapsed(annotation: Annotation, now) -> bool:
    return (
        annotation.status == Annotation.Status.DRAFT
        and annotation.reserved_until is not None
        and annotation.reserved_until <= now
    )


def released_by_queue(queues: list[LabelingQueue]) -> dict[int, Released]:
    """released_of for many queues in one query (queue id -> Released; queues without an order are left out)."""
    rows = AuditOrder.objects.filter(queue__in=queues).values_list("queue_id", "pk", "released")
    return {queue_id: Released(order_id, released) for queue_id, order_id, released in rows}


def remaining_for(user: User, queue: LabelingQueue, audits: dict[int, Released] | None = None) -> int:
    """How many outputs this annotator could still be given (for their own progress). `audits`: the audit
    orders of many queues as released_by_queue read them (a page listing queues reads them once); without
    it, this queue's is read here."""
    now = timezone.now()
    released = released_of(queue) if audits is None else audits.get(queue.pk)
    return _candidates(queue.eval_set_id, queue.rubric_version_id, user, now, [], released).count()
