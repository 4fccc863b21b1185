"""Where a workspace's alerts go, and what happened to each one (docs/alerts.md).

A destination is a Slack incoming webhook, a generic webhook (a JSON body signed with HMAC-SHA256) or a list of
email addresses. Each alert makes one delivery per enabled destination, and each try of a delivery one attempt:
the delivery log. A delivery keeps its workspace and the destination's name of its own, so removing a destination
keeps its log.
"""

from __future__ import annotations

from django.conf import settings
from django.db import models

from evals.models import Workspace


class DestinationKind(models.TextChoices):
    SLACK = "slack", "Slack (incoming webhook)"
    WEBHOOK = "webhook", "Webhook (signed JSON)"
    EMAIL = "email", "Email"


class AlertDestination(models.Model):
    workspace_path = "workspace"

    workspace = models.ForeignKey(Workspace, on_delete=models.CASCADE, related_name="alert_destinations")
    name = models.CharField(max_length=100)
    kind = models.CharField(max_length=10, choices=DestinationKind.choices)
    url = models.URLField(max_length=2000, blank=True)  # webhooks; for Slack the path itself is the credential
    addresses = models.TextField(blank=True)  # email: one address a line
    # The NAME of the environment variable holding the generic webhook's HMAC secret, read at send time from the
    # variables the operator allows (ICEWATER_ALERT_SECRET_VARS); the secret itself is never stored.
    secret_env = models.CharField(max_length=100, blank=True)
    enabled = models.BooleanField(default=True)
    created_by = models.ForeignKey(settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["workspace", "name"], name="alert_destination_name_unique_in_workspace")
        ]
        ordering = ["name"]

    def __str__(self) -> str:
        return self.name

    def address_list(self) -> list[str]:
        return [line.strip() for line in self.addresses.splitlines() if line.strip()]


class DeliveryStatus(models.TextChoices):
    QUEUED = "queued", "Queued"
    SENDING = "sending", "Sending"
    SENT = "sent", "Sent"
    FAILED = "failed", "Failed"
    REFUSED = "refused", "Refused"  # the operator's rules forbid it now (host, address, secret variable)


class AlertDeliveryQuerySet(models.QuerySet["AlertDelivery"]):
    def due(self, now) -> AlertDeliveryQuerySet:
        """Deliveries waiting for their next try whose time has come."""
        return self.filter(status=DeliveryStatus.QUEUED, next_attempt_at__lte=now)


class AlertDelivery(models.Model):
    workspace_path = "workspace"
    TERMINAL = (DeliveryStatus.SENT, DeliveryStatus.FAILED, DeliveryStatus.REFUSED)

    workspace = models.ForeignKey(Workspace, on_delete=models.CASCADE, related_name="alert_deliveries")
    destination = models.ForeignKey(
        AlertDestination, null=True, blank=True, on_delete=models.SET_NULL, related_name="deliveries"
    )
    destination_name = models.CharField(max_length=100)  # kept when the destination is removed
    dedupe_key = models.CharField(max_length=200)
    message = models.JSONField()  # AlertMessage.as_json()
    status = models.CharField(max_length=10, choices=DeliveryStatus.choices, default=DeliveryStatus.QUEUED)
    attempts = models.PositiveIntegerField(default=0)
    next_attempt_at = models.DateTimeField()
    claimed_at = models.DateTimeField(null=True, blank=True)  # when the try under way started (status sending)
    last_error = models.TextField(blank=True)
    last_status_code = models.PositiveIntegerField(null=True, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)
    sent_at = models.DateTimeField(null=True, blank=True)

    objects = AlertDeliveryQuerySet.as_manager()

    class Meta:
        constraints = [
            # One alert reaches one destination once: the watch may raise the same alarm again (a restart, a
            # second look) and the destination hears it once.
            models.UniqueConstraint(fields=["destination", "dedupe_key"], name="alert_delivered_once_per_key")
        ]
        indexes = [models.Index(fields=["status", "next_attempt_at"])]
        ordering = ["-created_at", "-pk"]

    def __str__(self) -> str:
        return f"{self.dedupe_key} to {self.destination_name}: {self.status}"


class AttemptOutcome(models.TextChoices):
    SENT = "sent", "sent"
    RETRY = "retry", "failed, tried again"
    FAILED = "failed", "failed"
    REFUSED = "refused", "refused"
    LOST = "lost", "lost with its worker, tried again"


class DeliveryAttempt(models.Model):
    """One try of a delivery: when, how it ended, the receiver's status code, the error in words, how long."""

    workspace_path = "delivery__workspace"

    delivery = models.ForeignKey(AlertDelivery, on_delete=models.CASCADE, related_name="attempt_log")
    number = models.PositiveIntegerField()
    started_at = models.DateTimeField()
    outcome = models.CharField(max_length=10, choices=AttemptOutcome.choices)
    status_code = models.PositiveIntegerField(null=True, blank=True)
    error = models.TextField(blank=True)
    duration_ms = models.PositiveIntegerField()

    class Meta:
        constraints = [models.UniqueConstraint(fields=["delivery", "number"], name="one_attempt_per_number")]
        ordering = ["delivery", "number"]

    def __str__(self) -> str:
        return f"try {self.number}: {self.outcome}"
