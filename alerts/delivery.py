"""The one entry point for raising an alert: `send_alert(workspace, message)`.

It records one delivery per enabled destination of the workspace, in the caller's transaction, and queues the
first try for when that transaction commits (an alert of a rolled-back change is never sent). The same
`dedupe_key` to the same destination is recorded, and so delivered, once: calling again returns the delivery
made the first time.
"""

from __future__ import annotations

import functools
import logging
import uuid

from celery import signature
from django.db import IntegrityError, transaction
from django.utils import timezone

from evals.models import Workspace
from evals.workspaces import in_workspace

from .messages import AlertMessage
from .models import AlertDelivery, AlertDestination

log = logging.getLogger("icewater.alerts")
DELIVER_TASK = "alerts.tasks.deliver_alert"
# A few quick publish retries; a broker that stays down leaves the delivery queued for the sweep (alerts/sweep.py).
DEDUPE_KEY_CHARS = 200  # AlertDelivery.dedupe_key's column
BROKER_RETRY = {"max_retries": 3, "interval_start": 0.2, "interval_step": 0.5, "interval_max": 1.0}


def send_alert(workspace: Workspace, message: AlertMessage) -> list[AlertDelivery]:
    if not message.dedupe_key or len(message.dedupe_key) > DEDUPE_KEY_CHARS:
        raise ValueError(f"an alert's dedupe_key has 1 to {DEDUPE_KEY_CHARS} characters: {message.dedupe_key[:50]!r}")
    deliveries = []
    destinations = in_workspace(AlertDestination, workspace).filter(enabled=True).order_by("name")
    for destination in destinations:
        delivery, created = _record(workspace, destination, message)
        deliveries.append(delivery)
        if created:
            transaction.on_commit(functools.partial(enqueue, delivery.pk))
    return deliveries


def _record(workspace: Workspace, destination: AlertDestination, message: AlertMessage) -> tuple[AlertDelivery, bool]:
    found = AlertDelivery.objects.filter(destination=destination, dedupe_key=message.dedupe_key).first()
    if found is not None:
        return found, False
    try:
        with transaction.atomic():  # the unique constraint decides between two callers at once
            made = AlertDelivery.objects.create(
                workspace=workspace,
                destination=destination,
                destination_name=destination.name,
                dedupe_key=message.dedupe_key,
                message=message.as_json(),
                next_attempt_at=timezone.now(),
            )
            return made, True
    except IntegrityError:
        return AlertDelivery.objects.get(destination=destination, dedupe_key=message.dedupe_key), False


def enqueue(delivery_id: int, countdown: float = 0) -> bool:
    """Queue a try of the delivery; False (logged) when the broker cannot be reached: the delivery stays queued
    and the periodic sweep queues it again."""
    try:
        signature(DELIVER_TASK, args=(delivery_id,)).apply_async(
            countdown=countdown, retry=True, retry_policy=BROKER_RETRY
        )
    except Exception as exc:  # kombu raises several kinds; the row waits for the sweep either way
        log.warning("alert delivery %s: could not reach the Celery broker (%s); the sweep queues it", delivery_id, exc)
        return False
    return True


def send_test(destination: AlertDestination, *, sent_by: str, url: str = "", queue: bool = True) -> AlertDelivery:
    """A test alert to this one destination (the page's and the command's "test"): a new delivery each time,
    queued for a worker unless `queue` is False (the command tries it itself)."""
    message = AlertMessage(
        kind="test",
        title="Test alert from Icewater",
        text=f"{sent_by} sent this to check that alerts of workspace {destination.workspace.name} reach you. "
        "Nothing moved; no action is needed.",
        url=url,
        facts=(("Workspace", destination.workspace.name), ("Destination", destination.name), ("Sent by", sent_by)),
        dedupe_key=f"test-{uuid.uuid4().hex}",
    )
    delivery, _ = _record(destination.workspace, destination, message)
    if queue:
        transaction.on_commit(lambda: enqueue(delivery.pk))
    return delivery
