"""Outputs appended at the end of a queue's audit order, released (labeling/audit_order.py append_released): how a
watch's audit stream reaches annotators (docs/calibration.md, "The watch in the product")."""

from __future__ import annotations

import pytest

from labeling.audit_order import append_released, release_next, start_audit_order
from labeling.models import Annotation, AuditOrder, AuditOrderItem
from labeling.queue import claim_next, current_queue, remaining_for
from tests.factories import labeling_setup, make_output

pytestmark = pytest.mark.django_db


def handed_out(user, eval_set) -> list[int]:
    """Every output Next gives `user`, in turn, each submitted at once."""
    got = []
    while (claim := claim_next(user=user, queue=current_queue(eval_set))) is not None:
        got.append(claim.annotation.output_id)
        Annotation.objects.filter(pk=claim.annotation.pk).update(
            status=Annotation.Status.SUBMITTED, reserved_until=None
        )
    return got


def test_a_queue_without_an_order_gets_one_that_hands_out_only_the_appended_outputs_in_turn(lead, annotator):
    eval_set, _, outputs = labeling_setup(n_outputs=5)
    # Before any order, Next hands out every output (the negative control for what follows).
    assert remaining_for(annotator, current_queue(eval_set)) == 5
    order = append_released(queue=current_queue(eval_set), output_ids=[outputs[3].pk, outputs[1].pk], by=lead)
    assert (order.seed, order.size, order.released) == (0, 2, 2)
    rows = list(AuditOrderItem.objects.filter(order=order).order_by("position").values_list("output_id", "position"))
    assert rows == [(outputs[3].pk, 1), (outputs[1].pk, 2)]
    assert handed_out(annotator, eval_set) == [outputs[3].pk, outputs[1].pk]  # in the order appended, nothing else
    later = make_output(eval_set)
    append_released(queue=current_queue(eval_set), output_ids=[later.pk], by=lead)
    assert handed_out(annotator, eval_set) == [later.pk]


def test_appending_twice_the_same_output_changes_nothing(lead):
    eval_set, _, outputs = labeling_setup(n_outputs=2)
    queue = current_queue(eval_set)
    append_released(queue=queue, output_ids=[outputs[0].pk], by=lead)
    order = append_released(queue=queue, output_ids=[outputs[0].pk], by=lead)
    assert (order.size, order.released) == (1, 1)
    assert AuditOrderItem.objects.filter(order=order).count() == 1


def test_an_existing_order_keeps_its_positions_and_its_released_prefix(lead, annotator):
    eval_set, _, outputs = labeling_setup(n_outputs=4)
    order, _ = start_audit_order(queue=current_queue(eval_set), by=lead, seed=5)
    release_next(order=order, k=1)
    later = make_output(eval_set)
    order = append_released(queue=current_queue(eval_set), output_ids=[later.pk], by=lead)
    # Positions 2 to 4 are not released, so `released` (a prefix) stays 1; the appended one is released on its own.
    assert (order.size, order.released) == (5, 1)
    assert AuditOrderItem.objects.get(order=order, output=later).position == 5
    first = AuditOrderItem.objects.get(order=order, position=1).output_id
    assert handed_out(annotator, eval_set) == [first, later.pk]
    assert AuditOrder.objects.count() == 1
