"""The audit order of a labeling queue (issue 22): a seeded random order, and Next following it strictly."""

from __future__ import annotations

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from labeling.audit_order import DEFAULT_RELEASE, release_next, seeded_order, start_audit_order
from labeling.models import Annotation, AuditOrderItem
from labeling.queue import QueueError, claim_next, current_queue, remaining_for
from tests.factories import all_answers, annotate_directly, default_workspace, labeling_setup, make_output, make_user

pytestmark = pytest.mark.django_db


def claim(user, eval_set):
    result = claim_next(user=user, queue=current_queue(eval_set))
    return result.annotation if result else None


def submit(annotation):
    annotation.status = Annotation.Status.SUBMITTED
    annotation.reserved_until = None
    annotation.save(update_fields=["status", "reserved_until"])


def order_of(eval_set):
    return list(
        AuditOrderItem.objects.filter(order__queue=current_queue(eval_set))
        .order_by("position")
        .values_list("output_id", flat=True)
    )


# --- the order -----------------------------------------------------------------------------------


def test_the_order_is_numpys_seeded_permutation_of_the_ids_sorted():
    # Pinned once from numpy 2 (default_rng(7).permutation(5) is [2, 0, 4, 1, 3]): a change of the rule or of
    # numpy's generator would silently change every stored plan's meaning, so it must show up here.
    assert seeded_order([50, 10, 40, 20, 30], seed=7) == [30, 10, 50, 20, 40]
    assert seeded_order([10, 20, 30, 40, 50], seed=7) == [30, 10, 50, 20, 40]  # input order does not matter


def test_the_same_seed_gives_the_same_order_and_another_seed_another():
    ids = list(range(1, 201))
    assert seeded_order(ids, 3) == seeded_order(list(reversed(ids)), 3)
    assert sorted(seeded_order(ids, 3)) == ids
    assert seeded_order(ids, 3) != seeded_order(ids, 4)


def test_starting_an_order_stores_every_output_once_in_the_seeded_order(lead):
    eval_set, rv, outputs = labeling_setup(n_outputs=6)
    order, created = start_audit_order(queue=current_queue(eval_set), by=lead, seed=11)
    assert created and (order.seed, order.size, order.released) == (11, 6, 0)
    assert order_of(eval_set) == seeded_order([o.pk for o in outputs], 11)
    positions = list(AuditOrderItem.objects.filter(order=order).order_by("position").values_list("position", flat=True))
    assert positions == [1, 2, 3, 4, 5, 6]


def test_a_second_start_reuses_the_order_whatever_its_seed(lead):
    eval_set, rv, outputs = labeling_setup(n_outputs=5)
    first, _ = start_audit_order(queue=current_queue(eval_set), by=lead, seed=1)
    again, created = start_audit_order(queue=current_queue(eval_set), by=lead, seed=2)
    assert again.pk == first.pk and not created and again.seed == 1
    assert AuditOrderItem.objects.count() == 5


def test_an_order_needs_outputs_and_a_sane_seed(lead):
    eval_set, rv, _ = labeling_setup(n_outputs=0)
    with pytest.raises(QueueError, match="no outputs"):
        start_audit_order(queue=current_queue(eval_set), by=lead)
    make_output(eval_set)
    with pytest.raises(QueueError, match="non-negative"):
        start_audit_order(queue=current_queue(eval_set), by=lead, seed=-1)


def test_releasing_moves_by_k_never_beyond_the_order(lead):
    eval_set, rv, _ = labeling_setup(n_outputs=30)
    order, _ = start_audit_order(queue=current_queue(eval_set), by=lead, seed=5)
    assert release_next(order=order).released == DEFAULT_RELEASE == 25
    assert release_next(order=order, k=3).released == 28
    assert release_next(order=order, k=25).released == 30
    with pytest.raises(QueueError, match="at least one"):
        release_next(order=order, k=0)


# --- Next follows it -----------------------------------------------------------------------------


def test_nothing_is_handed_out_before_a_release(lead, annotator):
    eval_set, rv, _ = labeling_setup(n_outputs=4)
    start_audit_order(queue=current_queue(eval_set), by=lead, seed=3)
    assert claim(annotator, eval_set) is None
    assert remaining_for(annotator, current_queue(eval_set)) == 0


def test_next_follows_the_order_with_two_annotators_and_stops_at_the_release(lead, annotator, annotator2):
    eval_set, rv, _ = labeling_setup(n_outputs=8)
    order, _ = start_audit_order(queue=current_queue(eval_set), by=lead, seed=9)
    release_next(order=order, k=3)
    expected = order_of(eval_set)
    handed = []
    for _ in range(3):
        for user in (annotator, annotator2):
            a = claim(user, eval_set)
            handed.append((user.username, a.output_id, a.slot))
            submit(a)
    assert handed == [(name, output_id, slot) for output_id in expected[:3] for name, slot in (("ann", 1), ("ann2", 2))]
    # Positions 4..8 are not released: nobody gets them, a third annotator neither.
    assert claim(annotator, eval_set) is None
    assert claim(make_user("ann3"), eval_set) is None
    release_next(order=order, k=1)
    assert claim(annotator, eval_set).output_id == expected[3]


def test_next_never_skips_a_released_position_with_a_free_slot(lead, annotator, annotator2):
    eval_set, rv, outputs = labeling_setup(n_outputs=6)
    order, _ = start_audit_order(queue=current_queue(eval_set), by=lead, seed=21)
    release_next(order=order, k=6)
    expected = order_of(eval_set)
    by_id = {o.pk: o for o in outputs}
    # Someone already labeled position 2 (e.g. imported): position 1 still comes first, then 2's free slot.
    annotate_directly(by_id[expected[1]], rv, make_user("early"), all_answers(rv))
    first = claim(annotator, eval_set)
    assert first.output_id == expected[0]
    submit(first)
    assert claim(annotator, eval_set).output_id == expected[1]
    assert claim(annotator2, eval_set).output_id == expected[0]


def test_without_an_audit_order_next_goes_by_output_id_as_before(annotator):
    eval_set, rv, outputs = labeling_setup(n_outputs=5)
    got = []
    for _ in range(5):
        a = claim(annotator, eval_set)
        got.append(a.output_id)
        submit(a)
    assert got == sorted(o.pk for o in outputs)
    assert claim(annotator, eval_set) is None


def test_a_moved_queue_has_no_order_until_one_is_started(lead, annotator):
    from labeling.queue import move_queue
    from tests.factories import make_rubric_version

    eval_set, rv, outputs = labeling_setup(n_outputs=3)
    start_audit_order(queue=current_queue(eval_set), by=lead, seed=1)
    move_queue(eval_set=eval_set, rubric_version=make_rubric_version(), by=lead)
    assert claim(annotator, eval_set).output_id == min(o.pk for o in outputs)


def test_next_with_an_order_runs_a_bounded_number_of_queries(lead, annotator):
    def queries(n_outputs, released):
        eval_set, rv, _ = labeling_setup(n_outputs=n_outputs)
        order, _ = start_audit_order(queue=current_queue(eval_set), by=lead, seed=2)
        release_next(order=order, k=released)
        user = make_user()
        queue = current_queue(eval_set)
        with CaptureQueriesContext(connection) as ctx:
            assert claim_next(user=user, queue=queue) is not None
        return len(ctx.captured_queries)

    small, large = queries(2, 1), queries(40, 30)
    assert small == large
    # savepoints aside: lock the user, the open draft, the order, the candidate, its slots, the insert
    assert large <= 10


def test_home_counts_only_released_outputs_as_left_and_reads_the_orders_once(lead, annotator):
    from labeling.my_queues import my_queues

    eval_set, rv, _ = labeling_setup(n_outputs=9)
    other, _, _ = labeling_setup(n_outputs=4)  # no order: all four are left
    order, _ = start_audit_order(queue=current_queue(eval_set), by=lead, seed=4)
    release_next(order=order, k=3)
    workspace = default_workspace()
    remaining = {q.queue.eval_set_id: q.remaining for q in my_queues(annotator, workspace)}
    assert remaining == {eval_set.pk: 3, other.pk: 4}
    with CaptureQueriesContext(connection) as ctx:
        my_queues(annotator, workspace)
    # the queues, the submitted counts, the audit orders, then per queue its draft and its count
    assert len(ctx.captured_queries) == 3 + 2 * 2
