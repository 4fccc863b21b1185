"""What a watch shows now: its settings and where they came from, the current bands against their bounds, the
alarms, what waits, and how fresh it is. One record for the page, `manage.py watch show` and the API.
"""

from __future__ import annotations

import datetime as dt
from typing import Any

from django.db.models import Count, Q
from django.utils import timezone

from calibration.stats.watch import PASS_RATE, TNR, TPR, Band, WatchState, pass_rate_band, rate_band

from .models import Watch, WatchAlarm, WatchOutput, WatchPoint

# The band points a page or answer lists, newest first, at most.
RECENT_POINTS = 20


def _band(band: Band, bound: float) -> dict[str, Any]:
    below = band.upper < bound  # the whole band below the bound: a worse reading than an alarm needs
    return {
        "estimate": band.estimate,
        "lower": band.lower,
        "upper": band.upper,
        "bound": bound,
        "reading": "below" if below else "above" if band.lower >= bound else "straddles",
    }


def alarm_record(alarm: WatchAlarm) -> dict[str, Any]:
    return {
        "what": alarm.what,
        "bound": alarm.bound,
        "estimate": alarm.estimate,
        "band": [alarm.lower, alarm.upper],
        "at_labels": alarm.at_labels,
        "at_outputs": alarm.at_outputs,
        "since_labels": alarm.since_labels,
        "since_outputs": alarm.since_outputs,
        "evidence": alarm.evidence,
        "advice": alarm.advice,
        "message": alarm.message,
        "fired_at": alarm.fired_at.isoformat(),
    }


def watch_record(watch: Watch) -> dict[str, Any]:
    """The list's fields of a watch (no figures read beyond the row)."""
    return {
        "id": watch.pk,
        "eval_set": watch.eval_set.name,
        "rubric": watch.rubric_version.ref,
        "criterion": watch.criterion.key,
        "judge": watch.judge_config.name,
        "status": "watching" if watch.is_active else "stopped",
        "minimum": watch.minimum,
        "audit_share": watch.audit_share,
        "alpha": watch.alpha,
        "labels": watch.labels_fed,
        "outputs": watch.outputs_fed,
        "started_by": watch.started_by.username,
        "started_at": watch.started_at.isoformat(),
        "stopped_at": watch.stopped_at.isoformat() if watch.stopped_at else None,
    }


def ago(when: dt.datetime | None, now: dt.datetime | None = None) -> str:
    if when is None:
        return "never"
    seconds = int(((now or timezone.now()) - when).total_seconds())
    if seconds < 60:
        return f"{max(seconds, 0)} s ago"
    if seconds < 3600:
        return f"{seconds // 60} min ago"
    if seconds < 86400:
        return f"{seconds // 3600} h ago"
    return f"{seconds // 86400} days ago"


def watch_figures(watch: Watch) -> dict[str, Any]:
    """Everything a reader of the watch sees: alarms first, then the bands against their bounds, then the
    settings with their sources, what waits, and the freshness."""
    state = WatchState.from_json(watch.state)
    counts = WatchOutput.objects.filter(watch=watch).aggregate(
        arrived=Count("pk"),
        drawn=Count("pk", filter=Q(audited=True)),
        awaiting_verdict=Count("pk", filter=Q(verdict="", fed=False)),
        awaiting_gold=Count("pk", filter=Q(audited=True, fed=False)),
        unjudged=Count("pk", filter=Q(verdict=WatchOutput.Verdict.UNJUDGED)),
    )
    points = list(WatchPoint.objects.filter(watch=watch).order_by("-labels")[:RECENT_POINTS])
    alarms = [alarm_record(a) for a in WatchAlarm.objects.filter(watch=watch).order_by("fired_at", "pk")]
    return {
        **watch_record(watch),
        "alarms": alarms,
        "bands": {
            PASS_RATE: _band(pass_rate_band(state), watch.minimum),
            TPR: _band(rate_band(state, TPR), watch.tpr_lower),
            TNR: _band(rate_band(state, TNR), watch.tnr_lower),
        },
        "minimum_source": watch.minimum_source,
        "tpr_lower": watch.tpr_lower,
        "tnr_lower": watch.tnr_lower,
        "bounds_source": watch.bounds_source,
        "fired": list(state.fired),
        **counts,
        "problem": watch.problem,
        "updated_at": watch.updated_at.isoformat() if watch.updated_at else None,
        "freshness": f"as of {watch.labels_fed:,} audit labels and {watch.outputs_fed:,} outputs, "
        f"updated {ago(watch.updated_at)}",
        "points": [
            {
                "labels": p.labels,
                "outputs": p.outputs,
                "estimate": p.estimate,
                "lower": p.lower,
                "upper": p.upper,
                "tpr": [p.tpr_estimate, p.tpr_lower, p.tpr_upper],
                "tnr": [p.tnr_estimate, p.tnr_lower, p.tnr_upper],
                "at": p.at.isoformat(),
            }
            for p in points
        ],
    }
