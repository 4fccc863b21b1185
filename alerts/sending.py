"""One try of one delivery: claim it, send it to its destination, log the attempt, say when to try again.

The claim is one conditional update (queued and due -> sending): a duplicate task, a retry that overlaps
another, or the sweep's re-send finds nothing to claim and sends nothing. Every rule is checked again here, at
send time, with the settings of the process that sends: the host list, the addresses, the secret's variable.
"""

from __future__ import annotations

import logging
import os
import smtplib
import time
from dataclasses import dataclass
from datetime import datetime, timedelta
from urllib.parse import urlsplit

from django.conf import settings
from django.core.mail import EmailMessage, get_connection
from django.db.models import F
from django.utils import timezone

from judging.backends import redact

from . import bodies
from .messages import AlertMessage
from .models import AlertDelivery, AlertDestination, AttemptOutcome, DeliveryAttempt, DeliveryStatus, DestinationKind
from .rules import retry_delay, retryable_status, secret_var_refusal, url_refusal
from .transport import Refused, SendFailed, post

log = logging.getLogger("icewater.alerts")


@dataclass(frozen=True)
class Outcome:
    status: str  # the delivery's status after this try
    retry_in: float | None = None  # seconds until the next try (status queued)


def attempt(delivery_id: int, now: datetime | None = None) -> Outcome | None:
    """Try delivery `delivery_id` once if it is queued and due; None when there was nothing to claim."""
    now = now or timezone.now()
    claimed = AlertDelivery.objects.due(now).filter(pk=delivery_id)
    if claimed.update(status=DeliveryStatus.SENDING, attempts=F("attempts") + 1, claimed_at=now) != 1:
        return None
    delivery = AlertDelivery.objects.select_related("destination", "workspace").get(pk=delivery_id)
    started = time.monotonic()
    status_code: int | None = None
    retry_after: float | None = None
    try:
        status_code = _send(delivery)
        outcome, error = DeliveryStatus.SENT, ""
    except Refused as exc:
        outcome, error = DeliveryStatus.REFUSED, str(exc)
    except SendFailed as exc:
        status_code, retry_after, error = exc.status, exc.retry_after, exc.reason
        outcome = DeliveryStatus.QUEUED if exc.retryable else DeliveryStatus.FAILED
    delay = retry_delay(delivery.attempts, settings.ICEWATER_ALERT_RETRY_DELAYS, retry_after)
    if outcome == DeliveryStatus.QUEUED and delay is None:
        outcome = DeliveryStatus.FAILED
        error = f"{error} (gave up after {delivery.attempts} tries)"
    return _record(delivery, outcome, status_code, error, now, started, delay)


def _record(delivery, outcome, status_code, error, now, started, delay) -> Outcome:
    duration_ms = round((time.monotonic() - started) * 1000)
    finished = timezone.now()
    error = error[:1000]
    DeliveryAttempt.objects.create(
        delivery=delivery,
        number=delivery.attempts,
        started_at=now,
        outcome=AttemptOutcome.RETRY if outcome == DeliveryStatus.QUEUED else outcome,
        status_code=status_code,
        error=error,
        duration_ms=duration_ms,
    )
    update: dict = {"status": outcome, "last_error": error, "last_status_code": status_code, "claimed_at": None}
    if outcome == DeliveryStatus.SENT:
        update["sent_at"] = finished
    if outcome == DeliveryStatus.QUEUED:
        update["next_attempt_at"] = finished + timedelta(seconds=delay)
    AlertDelivery.objects.filter(pk=delivery.pk).update(**update)
    log.info(
        "alert %s to %s: try %s %s%s%s",
        delivery.dedupe_key,
        delivery.destination_name,
        delivery.attempts,
        AttemptOutcome.RETRY if outcome == DeliveryStatus.QUEUED else outcome,
        f" (HTTP {status_code})" if status_code else "",
        f": {error}" if error else "",
    )
    return Outcome(status=outcome, retry_in=delay if outcome == DeliveryStatus.QUEUED else None)


def _send(delivery: AlertDelivery) -> int | None:
    """Send the delivery's message to its destination; its HTTP status (None for email). Refused or SendFailed
    when it did not go."""
    destination = delivery.destination
    if destination is None:
        raise Refused("the destination was removed before the alert was sent")
    if not destination.enabled:
        raise Refused(f"the destination {destination.name} is switched off: switch it on to send to it")
    message = AlertMessage.from_json(delivery.message)
    if destination.kind == DestinationKind.EMAIL:
        _email(destination, message)
        return None
    problem = url_refusal(destination.url, settings.ICEWATER_ALERT_HOSTS)
    if problem:
        raise Refused(f"{destination.name}: {problem}")
    secret = ""
    if destination.kind == DestinationKind.SLACK:
        body = bodies.encode(bodies.slack_body(message))
        headers: dict[str, str] = {}
    else:
        secret = webhook_secret(destination)
        body = bodies.encode(bodies.webhook_body(message, delivery=delivery.pk, workspace=delivery.workspace.slug))
        headers = bodies.signed_headers(secret, int(time.time()), body, delivery.pk)
    answer = post(
        destination.url,
        body,
        headers,
        allow_private=settings.ICEWATER_ALERT_PRIVATE_ADDRESSES,
        timeout=settings.ICEWATER_ALERT_TIMEOUT_SECONDS,
    )
    if 200 <= answer.status < 300:
        return answer.status
    host = urlsplit(destination.url).hostname
    if 300 <= answer.status < 400:
        where = f"a redirect to {answer.location_host}" if answer.location_host else "a redirect"
        reason = (
            f"{host} answered HTTP {answer.status}, {where}; redirects are not followed: if the receiver moved, "
            "change the destination's URL (its host must be on ICEWATER_ALERT_HOSTS)"
        )
    else:
        reason = f"{host} answered HTTP {answer.status}" + (f": {answer.excerpt}" if answer.excerpt else "")
    raise SendFailed(
        redact(reason, secret or None),
        retryable=retryable_status(answer.status),
        status=answer.status,
        retry_after=answer.retry_after,
    )


def webhook_secret(destination: AlertDestination) -> str:
    """The HMAC secret from the variable the destination names, read now; Refused (naming the variable, never a
    value) when the operator does not allow it or it is unset where this runs."""
    problem = secret_var_refusal(destination.secret_env, settings.ICEWATER_ALERT_SECRET_VARS)
    if problem:
        raise Refused(f"{destination.name}: secret_env {problem}")
    secret = os.environ.get(destination.secret_env, "")
    if not secret:
        raise Refused(
            f"{destination.name}: the environment variable {destination.secret_env} that should hold the webhook's "
            "signing secret is not set where alerts are sent (the Celery workers)"
        )
    return secret


def _email(destination: AlertDestination, message: AlertMessage) -> None:
    addresses = destination.address_list()
    if not addresses:
        raise Refused(f"{destination.name}: no email address to send to")
    email = EmailMessage(
        subject=bodies.email_subject(message),
        body=bodies.email_text(message),
        from_email=settings.DEFAULT_FROM_EMAIL,
        to=addresses,
        connection=get_connection(timeout=settings.ICEWATER_ALERT_TIMEOUT_SECONDS),
    )
    try:
        email.send()
    except (smtplib.SMTPRecipientsRefused, smtplib.SMTPSenderRefused) as exc:
        raise SendFailed(f"the mail server refused it ({type(exc).__name__}: {exc})", retryable=False) from None
    except (smtplib.SMTPException, OSError) as exc:
        raise SendFailed(f"the mail server did not take it ({type(exc).__name__}: {exc})", retryable=True) from None
