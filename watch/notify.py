"""What happens when a watch's alarm fires: the alert goes to the workspace's destinations, and a line to the log.

The one place an alarm leaves the watch. `alarm_raised` is called inside the update's transaction, right after
the alarm's row is created (watch/feed.py): `alerts.delivery.send_alert` records one delivery per destination in
that same transaction and queues each first try when it commits, so the alarm and its deliveries commit together
or not at all. A broker that is down when it commits loses nothing: the deliveries stay queued and the alerts'
periodic sweep queues them again (alerts/sweep.py). The same alarm raised twice is delivered once (its dedupe key
is the watch and the test).
"""

from __future__ import annotations

import functools
import logging

from django.conf import settings
from django.db import transaction
from django.urls import reverse

from alerts.delivery import send_alert
from alerts.messages import AlertMessage

from .models import Watch, WatchAlarm

log = logging.getLogger(__name__)


def watch_url(watch: Watch, site_url: str | None = None) -> str:
    """The watch page's absolute address under ICEWATER_SITE_URL; "" when that is not set (an alert leaves the
    request, so nothing else knows the host people reach)."""
    site = settings.ICEWATER_SITE_URL if site_url is None else site_url
    return f"{site.rstrip('/')}{reverse('watch:detail', args=[watch.pk])}" if site else ""


def _band(alarm: WatchAlarm) -> str:
    now = "unknown" if alarm.estimate is None else f"{alarm.estimate:.2f}"
    return f"{now} (band {alarm.lower:.2f} to {alarm.upper:.2f})"


def alarm_message(watch: Watch, alarm: WatchAlarm, site_url: str | None = None) -> AlertMessage:
    """The alert of one alarm: the statistics' own words, and the figures as facts a receiver can read."""
    url = watch_url(watch, site_url)
    unit = "audit label" if alarm.what == "pass rate" else "gold item"
    text = alarm.message
    if not url:
        text += f" (Watches › watch {watch.pk} in workspace {watch.eval_set.workspace.name} on Icewater.)"
    return AlertMessage(
        kind="watch-alarm",
        title=f"Watch {watch.pk}: the {alarm.what} of {watch.criterion.key} on {watch.eval_set.name} fell below "
        f"{alarm.bound:.2f}",
        text=text,
        url=url,
        facts=(
            ("What moved", alarm.what),
            ("Bound", f"{alarm.bound:.2f}"),
            ("Now", _band(alarm)),
            ("Since", f"{unit} {alarm.since_labels:,} (output {alarm.since_outputs:,})"),
            ("Evidence", f"{alarm.evidence:.0f} (fires at {1 / watch.alpha:.0f})"),
        ),
        dedupe_key=f"watch-{watch.pk}-{alarm.what}",
    )


def alarm_raised(watch: Watch, alarm: WatchAlarm) -> None:
    """Call in the transaction that created `alarm`: its deliveries are recorded there, sent once it commits."""
    deliveries = send_alert(watch.eval_set.workspace, alarm_message(watch, alarm))
    transaction.on_commit(functools.partial(_logged, alarm, len(deliveries)))


def _logged(alarm: WatchAlarm, deliveries: int) -> None:
    log.warning("watch %s: alarm %s: %s (%s alert deliveries)", alarm.watch_id, alarm.pk, alarm.message, deliveries)
