"""The Celery entry point of alerts: one try of one delivery, and the next one queued if it may help."""

from __future__ import annotations

from celery import shared_task

from . import sending
from .delivery import DELIVER_TASK, enqueue


# Registered under the name delivery.py queues it by. acks_late as every task here: a message delivered again
# finds the delivery claimed or done (sending.attempt) and sends nothing.
@shared_task(name=DELIVER_TASK, acks_late=True, ignore_result=True)
def deliver_alert(delivery_id: int) -> None:
    outcome = sending.attempt(delivery_id)
    if outcome is not None and outcome.retry_in is not None:
        enqueue(delivery_id, countdown=outcome.retry_in)
