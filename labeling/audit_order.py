"""The audit order of a labeling queue: a seeded random order its outputs are handed out in (issue 22).

An audit of a release candidate (calibration/audits/plans.py) decides from the gold of a uniformly random
prefix of the candidate's outputs. So the queue makes the order once, before any audit label, and Next
(labeling/queue.py) then hands out only the positions a lead has released, lowest first, never skipping: a prefix
of the order for a uniform audit, the plan's next outputs in the order for a stratified one.
Labeling owns the order (the queue follows it); calibration only reads it, so labeling never imports
calibration.
"""

from __future__ import annotations

import secrets
from collections.abc import Sequence

import numpy as np
from django.db import transaction
from django.db.models import F, Value
from django.db.models.functions import Least

from evals.models import Output, User

from .models import AuditOrder, AuditOrderItem, LabelingQueue
from .queue import QueueError

# How many more positions "Label these k next" releases when nobody says (the default).
DEFAULT_RELEASE = 25

# Seeds are drawn below 2**32 when none is given: short enough to read out and type again, and
# default_rng takes any non-negative integer, so a seed a lead chose is kept as given.
SEED_BOUND = 2**32


def seeded_order(output_ids: Sequence[int], seed: int) -> list[int]:
    """The output ids in the order of numpy's default_rng(seed).permutation over them sorted by id.

    Sorting first makes the order depend only on which outputs there are and the seed, never on how
    the database returned them; the same seed on the same outputs gives the same order.
    """
    ids = np.array(sorted(output_ids), dtype=np.int64)
    return [int(i) for i in np.random.default_rng(seed).permutation(ids)]


def new_seed() -> int:
    return secrets.randbelow(SEED_BOUND)


def audit_order_of(queue: LabelingQueue) -> AuditOrder | None:
    return AuditOrder.objects.filter(queue=queue).first()


def start_audit_order(*, queue: LabelingQueue, by: User, seed: int | None = None) -> tuple[AuditOrder, bool]:
    """The queue's audit order, made now from its eval set's outputs if it has none; (order, created).

    An existing order is reused whatever `seed` says (several audits share one random order; a
    second order would make the first one's prefix no longer the prefix Next hands out). Call it
    inside the caller's transaction so a failure later leaves no order behind.
    """
    if seed is not None and seed < 0:
        raise QueueError(f"The seed must be a non-negative whole number, got {seed}.")
    with transaction.atomic():
        # Lock the queue row: two leads starting audits at once must not make two orders.
        LabelingQueue.objects.select_for_update(no_key=True).filter(pk=queue.pk).first()
        existing = audit_order_of(queue)
        if existing is not None:
            return existing, False
        ids = list(Output.objects.filter(case__eval_set_id=queue.eval_set_id).values_list("pk", flat=True))
        if not ids:
            raise QueueError(f"{queue.eval_set.name} has no outputs to audit.")
        seed = new_seed() if seed is None else seed
        order = AuditOrder.objects.create(queue=queue, seed=seed, size=len(ids), created_by=by)
        AuditOrderItem.objects.bulk_create(
            AuditOrderItem(order=order, output_id=output_id, position=position)
            for position, output_id in enumerate(seeded_order(ids, seed), start=1)
        )
        return order, True


def release_next(*, order: AuditOrder, k: int = DEFAULT_RELEASE) -> AuditOrder:
    """Let Next hand out the following k positions of the order (never beyond its size)."""
    if k < 1:
        raise QueueError(f"Release at least one more output, not {k}.")
    with transaction.atomic():
        AuditOrder.objects.filter(pk=order.pk).update(released=Least(F("released") + Value(k), F("size")))
        order.refresh_from_db(fields=["released"])
        AuditOrderItem.objects.filter(order=order, position__lte=order.released, released=False).update(released=True)
    return order


def release_outputs(*, order: AuditOrder, output_ids: Sequence[int]) -> int:
    """Let Next hand out these outputs of the order, wherever they stand in it (a stratified audit's next ones of
    its population, which may be one agent version's); how many were not released before."""
    return AuditOrderItem.objects.filter(order=order, output_id__in=output_ids, released=False).update(released=True)


def append_released(*, queue: LabelingQueue, output_ids: Sequence[int], by: User) -> AuditOrder:
    """Put these outputs at the end of the queue's audit order, released, making an empty order if it has none.

    A watch's audit stream (watch/feed.py): its outputs arrive after the order was made and were drawn at random
    on arrival, so each goes to the queue as it is drawn, in arrival order. An order made here has no permutation
    to reproduce: its seed is 0 and its size grows. Once a queue has an order, Next hands out only released
    positions, so production outputs that were not drawn are never handed out.
    """
    with transaction.atomic():
        LabelingQueue.objects.select_for_update(no_key=True).filter(pk=queue.pk).first()
        order = audit_order_of(queue) or AuditOrder.objects.create(queue=queue, seed=0, size=0, created_by=by)
        AuditOrder.objects.select_for_update().filter(pk=order.pk).first()
        order.refresh_from_db(fields=["size", "released"])
        already = set(
            AuditOrderItem.objects.filter(order=order, output_id__in=output_ids).values_list("output_id", flat=True)
        )
        AuditOrderItem.objects.filter(order=order, output_id__in=already, released=False).update(released=True)
        new = [i for i in output_ids if i not in already]
        AuditOrderItem.objects.bulk_create(
            AuditOrderItem(order=order, output_id=output_id, position=position, released=True)
            for position, output_id in enumerate(new, start=order.size + 1)
        )
        # `released` counts a released prefix: it grows with the appended items while every earlier one is released.
        prefix = {"released": F("released") + len(new)} if order.released == order.size else {}
        AuditOrder.objects.filter(pk=order.pk).update(size=F("size") + len(new), **prefix)
        order.refresh_from_db(fields=["size", "released"])
        return order
