"""The periodic sweep (alerts/sweep.py): deliveries whose task or worker was lost are queued again."""

from __future__ import annotations

from datetime import timedelta

import pytest
from django.utils import timezone

from alerts import sweep
from alerts.models import AlertDelivery, AlertDestination, DeliveryStatus
from periodic.jobs import JOBS
from tests.factories import default_workspace

pytestmark = pytest.mark.django_db


def delivery(key: str, **fields) -> AlertDelivery:
    destination, _ = AlertDestination.objects.get_or_create(
        workspace=default_workspace(), name="ops", defaults={"kind": "email", "addresses": "a@example.com"}
    )
    values = {"next_attempt_at": timezone.now(), **fields}
    message = {"kind": "test", "title": "t", "text": "", "url": "", "facts": [], "dedupe_key": key}
    return AlertDelivery.objects.create(
        workspace=default_workspace(),
        destination=destination,
        destination_name="ops",
        dedupe_key=key,
        message=message,
        **values,
    )


def test_lost_tasks_and_lost_workers_are_queued_again_and_nothing_else(monkeypatch):
    queued: list[int] = []
    monkeypatch.setattr(sweep, "enqueue", lambda pk: queued.append(pk) or True)
    now = timezone.now()
    waiting = delivery("waiting", next_attempt_at=now - timedelta(minutes=5))
    delivery("fresh", next_attempt_at=now)  # its task is on its way
    delivery("later", next_attempt_at=now + timedelta(minutes=5))  # a retry not due yet
    lost = delivery("lost", status=DeliveryStatus.SENDING, attempts=1, claimed_at=now - timedelta(minutes=10))
    delivery("busy", status=DeliveryStatus.SENDING, attempts=1, claimed_at=now - timedelta(seconds=20))
    delivery("done", status=DeliveryStatus.SENT, next_attempt_at=now - timedelta(hours=1))

    said = sweep.sweep_deliveries()

    assert said == "1 waiting deliveries queued again, 1 lost tries"
    assert queued == [waiting.pk]  # the lost one is due now: the next sweep (or a task) takes it
    lost.refresh_from_db()
    assert lost.status == DeliveryStatus.QUEUED and lost.claimed_at is None
    assert [(a.number, a.outcome) for a in lost.attempt_log.all()] == [(1, "lost")]


def test_the_sweep_is_a_periodic_job():
    assert JOBS["alert-deliveries"].run is sweep.sweep_deliveries
