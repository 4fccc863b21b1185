"""The delivery log as the page shows it: one row per alert (its dedupe_key), each destination's delivery with
its tries. Two queries, whatever the number of alerts shown."""

from __future__ import annotations

from dataclasses import dataclass, field

from django.db.models import Prefetch

from evals.models import Workspace
from evals.workspaces import in_workspace

from .models import AlertDelivery, DeliveryAttempt

SHOWN = 50  # the newest deliveries on the page


@dataclass
class AlertRow:
    dedupe_key: str
    kind: str
    title: str
    created_at: object
    deliveries: list[AlertDelivery] = field(default_factory=list)


def alert_rows(workspace: Workspace, limit: int = SHOWN) -> list[AlertRow]:
    deliveries = (
        in_workspace(AlertDelivery, workspace)
        .order_by("-created_at", "-pk")
        .prefetch_related(Prefetch("attempt_log", queryset=DeliveryAttempt.objects.order_by("number")))[:limit]
    )
    rows: dict[str, AlertRow] = {}
    for delivery in deliveries:
        row = rows.get(delivery.dedupe_key)
        if row is None:
            message = delivery.message
            row = rows[delivery.dedupe_key] = AlertRow(
                delivery.dedupe_key, str(message.get("kind", "")), str(message.get("title", "")), delivery.created_at
            )
        row.deliveries.append(delivery)
    return list(rows.values())
