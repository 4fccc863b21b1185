"""The watch page's two charts from the stored rows: the pass rate's band over time (every WatchPoint: the chart
cuts a long history into columns itself) and the judge's TPR/TNR now beside the calibration's intervals.

Only the five columns the chart draws are read from the points, as tuples (no model instances): 20,000 points
stay well under a tenth of a second (tests/watch/test_watch_page.py measures it).
"""

from __future__ import annotations

import dataclasses
from typing import Any

from django.db.models import Count, Q

from calibration.stats.watch import TNR, TPR, Alarm, BandPoint, WatchState, rate_band

from .chart import PassRateChart, RatesChart, pass_rate_chart, rates_chart
from .models import Watch, WatchAlarm, WatchOutput, WatchPoint


def band_points(watch: Watch) -> list[BandPoint]:
    rows = WatchPoint.objects.filter(watch=watch).order_by("labels")
    return [BandPoint(*row) for row in rows.values_list("labels", "outputs", "estimate", "lower", "upper")]


def as_alarm(row: WatchAlarm) -> Alarm:
    """The statistics' Alarm the row was made from (the row keeps each of its fields under the same name)."""
    return Alarm(**{f.name: getattr(row, f.name) for f in dataclasses.fields(Alarm)})


def calibration_interval(watch: Watch, key: str, lower: float) -> tuple[float, float]:
    """The calibration's interval whose lower end is the watch's bound: the gating mark's row when the bound came
    from it; a bound the lead gave has no interval, so it is drawn as that one value."""
    figures: Any = watch.gating_mark.figures if watch.gating_mark is not None else {}
    interval = figures.get(key) if isinstance(figures, dict) else None
    if isinstance(interval, (list, tuple)) and len(interval) == 2 and interval[0] == lower:
        high = float(interval[1])
        if lower <= high <= 1:
            return lower, high
    return lower, lower


def charts(watch: Watch, alarms: list[WatchAlarm]) -> tuple[PassRateChart, RatesChart]:
    state = WatchState.from_json(watch.state)
    gold = WatchOutput.objects.filter(watch=watch, audited=True, fed=True).aggregate(
        passes=Count("pk", filter=Q(gold="PASS")), fails=Count("pk", filter=Q(gold="FAIL"))
    )
    return (
        pass_rate_chart(band_points(watch), watch.minimum, [as_alarm(a) for a in alarms]),
        rates_chart(
            rate_band(state, TPR),
            rate_band(state, TNR),
            calibration_interval(watch, "tpr_ci", watch.tpr_lower),
            calibration_interval(watch, "tnr_ci", watch.tnr_lower),
            (gold["passes"], gold["fails"]),
        ),
    )
