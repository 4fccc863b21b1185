"""Alerts through a real Celery worker (tests/services.py), which reads the operator's settings from its own
environment: the first try queued when the alert's transaction commits, the retries queued by the task itself."""

from __future__ import annotations

import time

import pytest
from django.db import transaction

from alerts.delivery import send_alert
from alerts.messages import AlertMessage
from alerts.models import AlertDelivery, AlertDestination, DeliveryStatus
from tests.alert_helpers import Answer
from tests.factories import default_workspace

pytestmark = [pytest.mark.celery, pytest.mark.django_db(transaction=True)]
WITHIN_S = 60  # a generous ceiling; the deliveries below take a few seconds


@pytest.fixture
def worker(workers, receiver, monkeypatch):
    """A worker whose operator allows the receiver (on loopback) and the signing secret's variable."""
    for name, value in {
        "ICEWATER_ALERT_HOSTS": receiver.host,
        "ICEWATER_ALERT_PRIVATE_ADDRESSES": "1",
        "ICEWATER_ALERT_SECRET_VARS": "HOOKS_SIGNING_KEY",
        "HOOKS_SIGNING_KEY": "k-worker",
        "ICEWATER_ALERT_RETRY_DELAYS": "1,1",
    }.items():
        monkeypatch.setenv(name, value)
    receiver.secret = "k-worker"
    return workers(concurrency=2)


def wait_for_end(delivery: AlertDelivery) -> AlertDelivery:
    deadline = time.monotonic() + WITHIN_S
    while time.monotonic() < deadline:
        delivery.refresh_from_db()
        if delivery.status in AlertDelivery.TERMINAL:
            return delivery
        time.sleep(0.2)
    raise AssertionError(f"delivery still {delivery.status} after {WITHIN_S} s")


def alarm(key: str) -> AlertMessage:
    return AlertMessage("watch-alarm", "Judge TNR fell", "0.23 -> 0.13", "", (("TNR", "0.13"),), key)


def test_a_refusal_then_success_is_retried_by_the_worker_and_delivered_once(worker, receiver):
    receiver.answers = [Answer(500), Answer(200)]
    AlertDestination.objects.create(
        workspace=default_workspace(), name="ops", kind="webhook", url=receiver.url(), secret_env="HOOKS_SIGNING_KEY"
    )
    with transaction.atomic():
        (delivery,) = send_alert(default_workspace(), alarm("tnr-1"))
        send_alert(default_workspace(), alarm("tnr-1"))  # raised twice: one delivery, one first try queued
    delivery = wait_for_end(delivery)
    time.sleep(2)  # room for a duplicate try, were one on its way
    assert delivery.status == DeliveryStatus.SENT and delivery.attempts == 2
    assert [r.answered for r in receiver.received] == [500, 200]
    assert all(r.signature_ok for r in receiver.received)
    assert [(a.outcome, a.status_code) for a in delivery.attempt_log.all()] == [("retry", 500), ("sent", 200)]


def test_a_receiver_that_always_fails_has_every_try_logged_then_failed(worker, receiver):
    receiver.answers = [Answer(500)]
    AlertDestination.objects.create(workspace=default_workspace(), name="slack", kind="slack", url=receiver.url())
    receiver.secret = None
    with transaction.atomic():
        (delivery,) = send_alert(default_workspace(), alarm("tnr-2"))
    delivery = wait_for_end(delivery)
    assert delivery.status == DeliveryStatus.FAILED and len(receiver.received) == 3
    assert [a.outcome for a in delivery.attempt_log.all()] == ["retry", "retry", "failed"]


def test_an_alert_of_a_rolled_back_transaction_is_never_sent(worker, receiver):
    AlertDestination.objects.create(workspace=default_workspace(), name="slack", kind="slack", url=receiver.url())
    with pytest.raises(RuntimeError), transaction.atomic():
        send_alert(default_workspace(), alarm("tnr-3"))
        raise RuntimeError("the watch's update failed")
    time.sleep(3)
    assert AlertDelivery.objects.count() == 0 and receiver.received == []
