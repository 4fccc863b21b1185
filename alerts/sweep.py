"""The periodic sweep of deliveries (periodic/jobs.py): what a lost message or a lost worker left behind.

- A delivery queued and due for longer than a minute has no task on its way (the broker was down when it was
  queued, or the message was lost): it is queued again. A task that is on its way after all finds it claimed.
- A delivery `sending` for longer than the lease lost its worker mid-try: the try is logged as lost and the
  delivery queued again. The receiver may have got that try: the retry carries the same X-Icewater-Delivery
  header (and the same dedupe_key), by which a receiver drops a repeat.
"""

from __future__ import annotations

from datetime import timedelta

from django.utils import timezone

from .delivery import enqueue
from .models import AlertDelivery, AttemptOutcome, DeliveryAttempt, DeliveryStatus

STALE_QUEUED = timedelta(minutes=1)
SENDING_LEASE = timedelta(minutes=5)  # far above the timeouts of one try


def sweep_deliveries() -> str:
    now = timezone.now()
    lost = 0
    sending = AlertDelivery.objects.filter(status=DeliveryStatus.SENDING)
    for delivery in sending.filter(claimed_at__lt=now - SENDING_LEASE):
        taken = sending.filter(pk=delivery.pk, claimed_at=delivery.claimed_at)
        if taken.update(status=DeliveryStatus.QUEUED, next_attempt_at=now, claimed_at=None) == 1:
            lost += 1
            DeliveryAttempt.objects.get_or_create(
                delivery=delivery,
                number=delivery.attempts,
                defaults={
                    "started_at": delivery.claimed_at or now,
                    "outcome": AttemptOutcome.LOST,
                    "error": "the worker stopped during this try; tried again",
                    "duration_ms": 0,
                },
            )
    stale = list(AlertDelivery.objects.due(now - STALE_QUEUED).values_list("pk", flat=True)[:500])
    for pk in stale:
        enqueue(pk)
    return f"{len(stale)} waiting deliveries queued again, {lost} lost tries"
