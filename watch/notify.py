"""What happens when a watch's alarm fires: for now, a line in the log.

The one place an alarm leaves the watch. The alerts app (webhooks and email, issue 39 item 3) is built apart; once
it is merged this function hands the alarm to it, and nothing else in the watch changes. Called after the
transaction that created the alarm row commits (watch/feed.py), so a rolled-back update never notifies.
"""

from __future__ import annotations

import logging

from .models import WatchAlarm

log = logging.getLogger(__name__)


def alarm_fired(alarm: WatchAlarm) -> None:
    log.warning("watch %s: alarm %s: %s", alarm.watch_id, alarm.pk, alarm.message)
