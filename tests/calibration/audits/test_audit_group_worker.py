"""An audit group's shared decision computed by a real Celery worker (issue 37 item 3): labels of both criteria
arrive, the group is behind until the worker has computed the decision of today's gold, and what it stores is the
hand-worked one of test_audit_groups.py (the release FAILs at label 20 on next_step)."""

from __future__ import annotations

import time

import pytest

from calibration.audits import group_figures
from calibration.audits.groups import release_group_next
from calibration.models import AuditPlanGroup
from tests.audit_helpers import KEY, in_order
from tests.calibration.audits.test_audit_groups import OTHER, candidate, group_of, label

pytestmark = [pytest.mark.celery, pytest.mark.figures_worker, pytest.mark.django_db(transaction=True)]

WITHIN_S = 120  # a generous ceiling; never reached when it works


def wait_current(group: AuditPlanGroup) -> AuditPlanGroup:
    deadline = time.monotonic() + WITHIN_S
    while time.monotonic() < deadline:
        group.refresh_from_db()
        if group.is_current and group.gold_state == group_figures.group_state(group, list(group.plans.all())):
            return group
        time.sleep(0.2)
    raise AssertionError(f"audit group {group.pk}'s shared decision was not computed within {WITHIN_S} s")


def test_a_worker_computes_the_group_s_shared_decision_of_today_s_gold(workers):
    lead, rv, judge, eval_set = candidate()
    group = group_of(lead, rv, judge, eval_set)
    release_group_next(group=group, by=lead, k=25)
    label(rv, in_order(group.plans.first())[:25], {KEY: "PASS", OTHER: "FAIL"})
    group.refresh_from_db()
    # No worker yet: the change is seen, the figures are behind (none, or of the gold before the labels).
    assert not group.is_current
    assert group.figures is None or group.figures.get("decided") is None
    workers(concurrency=1)
    group = wait_current(group)
    assert (group.figures["decided"], group.figures["decided_at"], group.figures["deciding"]) == ("FAIL", 20, [OTHER])
    assert group.duration_s is not None and group.computed_at is not None
