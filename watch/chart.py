"""Geometry of the watch page's two server-rendered SVG charts (templates/watch/_pass_rate_chart.html and
_rates_chart.html draw them; no JavaScript, no CDN).

Pure functions: the watch's bands and alarms in (calibration/stats/watch), numbers and words out, in the
SVG's own units. The SVG scales to its column (width 100%), so `width` is the column width at which its text
is drawn at its nominal size: about 1,000 for the page's main column, about 600 for half of it.

The pass rate's chart keeps its x axis in audit labels (what the band moves with) and gives the outputs in
each column's tooltip. A long history is cut into at most MAX_COLUMNS columns, and each column keeps the
lowest and the highest value of each line in the order they came, so a dip shorter than a column still
shows. The y axis zooms to the estimate, the minimum and most of the band (the band of the first labels
spans nearly 0 to 1 and would flatten everything after it); what lies beyond is drawn at the edge.
"""

from __future__ import annotations

import bisect
import math
from collections.abc import Sequence
from dataclasses import dataclass

from calibration.stats.watch import PASS_RATE, TNR, TPR, Alarm, Band, BandPoint

MAX_COLUMNS = 200  # so at most 400 vertices a line, whatever the history's length
MIN_SPAN = 0.2  # the y axis never zooms closer than this: a 0.02 wobble must not look like a cliff
BAND_QUANTILE = 0.05  # the y axis covers the band's edges but for this share at each end
PASS_HEIGHT = 320
PASS_MARGIN_LEFT, PASS_MARGIN_RIGHT, PASS_MARGIN_BOTTOM = 56, 96, 46
LEGEND_Y = 14  # the legend's row; the alarms' labels sit in rows under it
ALARM_ROW = 14
TEXT_EM = 6.4  # an 11px character's mean advance in SVG units, to keep labels inside the box
SHORT = {PASS_RATE: "pass rate alarm", TPR: "TPR alarm", TNR: "TNR alarm"}


def thousands(n: int) -> str:
    return f"{n:,}"


def nice_step(span: float, most: int) -> float:
    """The smallest of 1, 2, 5 times a power of ten that cuts `span` into at most `most` steps."""
    if span <= 0:
        return 1.0
    raw = span / max(most, 1)
    power = 10 ** math.floor(math.log10(raw))
    for mult in (1, 2, 5, 10):
        if mult * power >= raw - 1e-12:
            return mult * power
    return 10 * power  # pragma: no cover - the loop ends at 10


def tick_step(span: float) -> float:
    """The rate axes' tick step: 0.05 up to a span of 0.3, 0.1 up to 0.6, else 0.2 (1e-9: 1 - 0.4 is 0.6 and a bit)."""
    return 0.05 if span <= 0.3 + 1e-9 else 0.1 if span <= 0.6 + 1e-9 else 0.2


@dataclass(frozen=True)
class Tick:
    at: float  # x or y in SVG units
    label: str


@dataclass(frozen=True)
class Column:
    """A stretch of the history under one tooltip: one point, or a bucket of a long history."""

    x: float
    w: float
    title: str


@dataclass(frozen=True)
class LegendItem:
    kind: str  # band, estimate, minimum, alarm, change: what the template draws as the key
    x: float  # the key's left edge; its text starts LEGEND_KEY further
    text: str


LEGEND_KEY = 22  # the key's width and the gap after it


def legend(left: float, clipped: bool, *, alarmed: bool) -> list[LegendItem]:
    """The legend's row, each item after the last one's text (its width estimated from its characters); the
    alarm's keys only when there is an alarm to read them by."""
    texts = [
        ("band", "band (cut at the chart's edges)" if clipped else "band"),
        ("estimate", "estimate"),
        ("minimum", "minimum"),
    ]
    if alarmed:
        texts += [("alarm", "alarm"), ("change", "since the change")]
    items, x = [], left
    for kind, text in texts:
        items.append(LegendItem(kind, round(x, 1), text))
        x += LEGEND_KEY + len(text) * TEXT_EM * 12 / 11 + 18
    return items


@dataclass(frozen=True)
class AlarmMark:
    x: float  # when it fired
    since_x: float  # where the change is estimated to have begun
    shade_w: float  # from since_x to x
    label: str
    label_y: float
    anchor: str  # text-anchor of the label: "end" near the right edge
    title: str  # the alarm's whole message


@dataclass(frozen=True)
class PassRateChart:
    id: str  # the element ids' prefix: two charts on one page must not share ids
    width: int
    height: int
    left: float
    right: float
    top: float
    bottom: float
    y_min: float
    y_max: float
    band_path: str  # a closed polygon: the upper edge forward, the lower edge back ("" when empty)
    estimate_path: str
    now: tuple[float, float] | None  # the last estimate (x, y): a dot, so one point still shows
    minimum_y: float
    minimum_label: str
    x_ticks: list[Tick]
    y_ticks: list[Tick]
    columns: list[Column]
    alarms: list[AlarmMark]
    clipped: bool  # some of the band lies beyond the y axis and is drawn at its edge
    legend: list[LegendItem]
    title: str
    desc: str
    summary: str
    empty: str  # a plain sentence when there is nothing to draw yet, else ""

    @property
    def plot_width(self) -> float:
        return round(self.right - self.left, 1)

    @property
    def plot_height(self) -> float:
        return round(self.bottom - self.top, 1)

    @property
    def center_x(self) -> float:
        return round((self.left + self.right) / 2, 1)

    @property
    def center_y(self) -> float:
        return round((self.top + self.bottom) / 2, 1)

    @property
    def legend_y(self) -> int:
        return LEGEND_Y

    @property
    def legend_key(self) -> int:
        return LEGEND_KEY

    @property
    def label_x(self) -> float:
        return round(self.right + 6, 1)


def _quantile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, max(0, int(q * len(ordered))))]


def y_range(points: Sequence[BandPoint], minimum: float) -> tuple[float, float, float]:
    """(bottom, top, tick step) of the y axis: the minimum, every estimate and the band but for its extreme
    BAND_QUANTILE at each end, padded by 0.02, at least MIN_SPAN, snapped out to the ticks, within 0 to 1."""
    estimates = [p.estimate for p in points if p.estimate is not None]
    low = min([minimum, *estimates])
    high = max([minimum, *estimates])
    if points:
        low = min(low, _quantile([p.lower for p in points], BAND_QUANTILE))
        high = max(high, _quantile([p.upper for p in points], 1 - BAND_QUANTILE))
    low, high = max(0.0, low - 0.02), min(1.0, high + 0.02)
    if high - low < MIN_SPAN:
        middle = (low + high) / 2
        low, high = middle - MIN_SPAN / 2, middle + MIN_SPAN / 2
        low, high = (0.0, MIN_SPAN) if low < 0 else (1.0 - MIN_SPAN, 1.0) if high > 1 else (low, high)
    step = tick_step(high - low)
    low = max(0.0, math.floor(low / step + 1e-9) * step)
    high = min(1.0, math.ceil(high / step - 1e-9) * step)
    return round(low, 4), round(high, 4), step


def buckets(count: int, most: int = MAX_COLUMNS) -> list[range]:
    """Consecutive index ranges covering 0..count-1, at most `most` of them, of near-equal size."""
    if count <= most:
        return [range(i, i + 1) for i in range(count)]
    edges = [round(i * count / most) for i in range(most + 1)]
    return [range(a, b) for a, b in zip(edges, edges[1:], strict=False) if b > a]


def extremes(values: Sequence[float | None], bucket: range) -> list[int]:
    """The indices of the lowest and the highest value in `bucket`, in the order they came (one when they are
    the same point; none when every value is None)."""
    known = [i for i in bucket if values[i] is not None]
    if not known:
        return []
    lowest = min(known, key=lambda i: (values[i], i))
    highest = max(known, key=lambda i: (values[i], -i))
    return sorted({lowest, highest})


def _fmt(v: float) -> str:
    return f"{v:.1f}".rstrip("0").rstrip(".") if v != int(v) else str(int(v))


def _path(vertices: list[tuple[float, float] | None]) -> str:
    """An SVG path through the vertices, lifting the pen at each None."""
    parts, pen_down = [], False
    for v in vertices:
        if v is None:
            pen_down = False
            continue
        parts.append(f"{'L' if pen_down else 'M'}{_fmt(v[0])},{_fmt(v[1])}")
        pen_down = True
    return " ".join(parts)


def _rate(v: float | None) -> str:
    return "unknown" if v is None else f"{v:.2f}"


def _span(a: int, b: int) -> str:
    return thousands(a) if a == b else f"{thousands(a)}–{thousands(b)}"


def _column_title(points: Sequence[BandPoint], bucket: range) -> str:
    first, last = points[bucket[0]], points[bucket[-1]]
    where = f"audit label {_span(first.labels, last.labels)} (output {_span(first.outputs, last.outputs)})"
    if len(bucket) == 1:
        return f"{where}: estimate {_rate(first.estimate)}, band {first.lower:.2f} to {first.upper:.2f}"
    known = [e for i in bucket if (e := points[i].estimate) is not None]
    estimate = f"estimate {_between(min(known), max(known))}" if known else "estimate unknown"
    lowest = min(points[i].lower for i in bucket)
    highest = max(points[i].upper for i in bucket)
    upper_low = min(points[i].upper for i in bucket)
    dip = f" (upper edge as low as {upper_low:.2f})" if f"{upper_low:.2f}" != f"{highest:.2f}" else ""
    return f"{where}: {estimate}, band within {lowest:.2f} to {highest:.2f}{dip}"


def _between(low: float, high: float) -> str:
    return f"{low:.2f}" if f"{low:.2f}" == f"{high:.2f}" else f"{low:.2f} to {high:.2f}"


def _alarm_label(points: Sequence[BandPoint], alarm: Alarm) -> tuple[int, int]:
    """(fired at, began after) in audit labels. The pass rate's alarm counts audit labels itself; a TPR or TNR
    alarm counts gold items of its class, so its place comes from its outputs: the audit labels by then."""
    if alarm.what == PASS_RATE:
        return alarm.at_labels, alarm.since_labels
    outputs = [p.outputs for p in points]
    at = bisect.bisect_right(outputs, alarm.at_outputs)
    since = bisect.bisect_right(outputs, alarm.since_outputs)
    return (points[at - 1].labels if at else 0), (points[since - 1].labels if since else 0)


@dataclass(frozen=True)
class Axes:
    """Where audit labels and rates land in the plot; a value beyond an axis is drawn at its edge."""

    left: float
    right: float
    top: float
    bottom: float
    x_hi: int  # the last audit label, at the right edge (0 is at the left)
    y_lo: float
    y_hi: float

    def x(self, labels: float) -> float:
        return round(self.left + min(max(labels, 0), self.x_hi) / self.x_hi * (self.right - self.left), 1)

    def y(self, rate: float) -> float:
        r = min(max(rate, self.y_lo), self.y_hi)
        return round(self.bottom - (r - self.y_lo) / (self.y_hi - self.y_lo) * (self.bottom - self.top), 1)


def _band_path(points: Sequence[BandPoint], cuts: list[range], ax: Axes) -> str:
    """The band as one polygon: the upper edge forward, the lower edge back, each with its extremes kept."""
    if len(points) == 1:  # one label: a bar, not a polygon of no width
        x, p = ax.x(points[0].labels), points[0]
        return (
            _path([(x - 4, ax.y(p.upper)), (x + 4, ax.y(p.upper)), (x + 4, ax.y(p.lower)), (x - 4, ax.y(p.lower))])
            + " Z"
        )
    if not points:
        return ""
    uppers: list[float | None] = [p.upper for p in points]
    lowers: list[float | None] = [p.lower for p in points]
    upper = [(ax.x(points[i].labels), ax.y(points[i].upper)) for b in cuts for i in extremes(uppers, b)]
    lower = [(ax.x(points[i].labels), ax.y(points[i].lower)) for b in cuts for i in extremes(lowers, b)]
    return _path([*upper, *reversed(lower)]) + " Z"


def _estimate_path(points: Sequence[BandPoint], cuts: list[range], ax: Axes) -> str:
    """The estimate's line, its extremes kept, the pen lifted over a stretch with no estimate."""
    estimates = [p.estimate for p in points]
    line: list[tuple[float, float] | None] = []
    for b in cuts:
        kept = extremes(estimates, b)
        line += [(ax.x(points[i].labels), ax.y(e)) for i in kept if (e := estimates[i]) is not None] or [None]
    return _path(line)


def _columns(points: Sequence[BandPoint], cuts: list[range], ax: Axes) -> list[Column]:
    """One tooltip a bucket, reaching half-way to its neighbours."""
    columns = []
    for k, b in enumerate(cuts):
        x0 = ax.left if k == 0 else (ax.x(points[cuts[k - 1][-1]].labels) + ax.x(points[b[0]].labels)) / 2
        x1 = ax.right if k == len(cuts) - 1 else (ax.x(points[b[-1]].labels) + ax.x(points[cuts[k + 1][0]].labels)) / 2
        columns.append(Column(round(x0, 1), round(max(x1 - x0, 0.5), 1), _column_title(points, b)))
    return columns


def _alarm_marks(points: Sequence[BandPoint], alarms: Sequence[Alarm], ax: Axes, width: int) -> list[AlarmMark]:
    marks = []
    for k, alarm in enumerate(alarms):
        at, since = _alarm_label(points, alarm)
        x, since_x = ax.x(at), ax.x(min(since, at))
        label = f"{SHORT.get(alarm.what, alarm.what)} (since about audit label {thousands(since)})"
        half = len(label) * TEXT_EM / 2  # about half the label's width at 11px: keep it inside the SVG
        anchor = "end" if x + half > width - 4 else "start" if x - half < 4 else "middle"
        row_y = LEGEND_Y + 14 + (k % 3) * ALARM_ROW
        marks.append(AlarmMark(x, since_x, round(x - since_x, 1), label, row_y, anchor, alarm.message()))
    return marks


def pass_rate_chart(
    points: Sequence[BandPoint],
    minimum: float,
    alarms: Sequence[Alarm],
    *,
    width: int = 1000,
    max_columns: int = MAX_COLUMNS,
    chart_id: str = "watch-pass-rate",
) -> PassRateChart:
    """The pass rate's band after each audit label, its estimate, the minimum and the alarms."""
    if width < 600:  # the legend's row
        raise ValueError(f"the pass rate chart needs a width of at least 600, got {width}")
    y_lo, y_hi, y_step = y_range(points, minimum)
    top = LEGEND_Y + 12 + min(len(alarms), 3) * ALARM_ROW
    right, bottom = width - PASS_MARGIN_RIGHT, PASS_HEIGHT - PASS_MARGIN_BOTTOM
    ax = Axes(PASS_MARGIN_LEFT, right, top, bottom, max(points[-1].labels, 1) if points else 1, y_lo, y_hi)
    y_values = [y_lo + i * y_step for i in range(round((y_hi - y_lo) / y_step) + 1)]
    x_ticks: list[Tick] = []
    if points:
        step = max(1, int(nice_step(ax.x_hi, max(2, int((ax.right - ax.left) // 90)))))
        x_ticks = [Tick(ax.x(v), thousands(v)) for v in range(0, ax.x_hi + 1, step)]
    cuts = buckets(len(points), max_columns)
    known = [p for p in points if p.estimate is not None]
    clipped = any(p.lower < y_lo or p.upper > y_hi for p in points)
    return PassRateChart(
        id=chart_id,
        width=width,
        height=PASS_HEIGHT,
        left=ax.left,
        right=ax.right,
        top=top,
        bottom=bottom,
        y_min=y_lo,
        y_max=y_hi,
        band_path=_band_path(points, cuts, ax),
        estimate_path=_estimate_path(points, cuts, ax),
        now=(ax.x(known[-1].labels), ax.y(known[-1].estimate or 0.0)) if known else None,
        minimum_y=ax.y(minimum),
        minimum_label=f"minimum {minimum:.2f}",
        x_ticks=x_ticks,
        y_ticks=[Tick(ax.y(v), f"{v:.2f}") for v in y_values],
        columns=_columns(points, cuts, ax),
        alarms=_alarm_marks(points, alarms, ax, width),
        clipped=clipped,
        legend=legend(ax.left, clipped, alarmed=bool(alarms)),
        title=f"The pass rate over time, against the minimum {minimum:.2f}",
        desc=(
            "The shaded band is where the pass rate is, from the recent audit labels; the line is the recent "
            "estimate; the dashed line is the release's minimum; red lines mark alarms, with the estimated "
            "change shaded before them. Audit labels run along the bottom."
        ),
        summary=pass_rate_summary(points, minimum, alarms),
        empty="" if points else "No audit labels yet: the band appears after the first one is settled.",
    )


def pass_rate_summary(points: Sequence[BandPoint], minimum: float, alarms: Sequence[Alarm]) -> str:
    """Every number the pass rate's chart draws, in words (for screen readers, and the chart's alt text)."""
    if not points:
        return f"No audit labels yet. The release's minimum pass rate is {minimum:.2f}."
    last = points[-1]
    text = (
        f"After {thousands(last.labels)} audit labels ({thousands(last.outputs)} outputs) the pass rate is "
        f"{'unknown' if last.estimate is None else f'about {last.estimate:.2f}'}, band {last.lower:.2f} to "
        f"{last.upper:.2f}; the release's minimum is {minimum:.2f}."
    )
    if last.upper < minimum:
        text += " The whole band is below the minimum."
    known = [p for p in points if p.estimate is not None]
    if known:
        low = min(known, key=lambda p: (p.estimate, p.labels))
        text += f" The lowest estimate was {low.estimate:.2f}, at audit label {thousands(low.labels)}."
    if not alarms:
        return text + " No alarm."
    for alarm in alarms:
        at, since = _alarm_label(points, alarm)
        text += (
            f" Alarm on the {alarm.what} at audit label {thousands(at)} (output {thousands(alarm.at_outputs)}),"
            f" the change since about audit label {thousands(since)}."
        )
    return text


# --- The judge's TPR and TNR now, beside the calibration's intervals --------------------------------------

RATE_ROW = 84
RATE_TOP = 6
RATE_LABEL_W = 92  # "calibration" right-aligned before the track
RATE_VALUE_W = 150  # the numbers after the track


@dataclass(frozen=True)
class RateRow:
    name: str  # "TPR"
    meaning: str
    heading: str  # the row's first line
    top: float
    now_y: float
    calibration_y: float
    estimate_x: float | None  # None: no gold items of the class yet
    band_x: float
    band_w: float
    now_text: str
    message_w: float  # the patch under the words when there is no estimate: the bound's line stops at it
    calibration_x: float
    calibration_w: float
    calibration_text: str
    bound_x: float
    bound_label: str
    bound_anchor: str  # keeps the bound's label inside the box
    below: bool  # the band's upper edge is under the bound: the rate has moved down for sure
    label: str  # the row in words


@dataclass(frozen=True)
class RatesChart:
    id: str
    width: int
    height: int
    track_left: float
    track_right: float
    value_x: float
    axis_y: float
    axis_min: float
    ticks: list[Tick]
    rows: list[RateRow]
    title: str
    desc: str
    summary: str

    @property
    def sublabel_x(self) -> float:
        return self.track_left - 8

    @property
    def track_width(self) -> float:
        return round(self.track_right - self.track_left, 1)


def rate_axis(values: Sequence[float]) -> tuple[float, float]:
    """(start, tick step) of the rates' axis, which ends at 1: 0.05 below the lowest value shown, rounded down
    to a tick, so the part where judges live (0.7 to 1.0, usually) gets the width; at least MIN_SPAN long."""
    low = min([*values, 1 - MIN_SPAN]) - 0.05
    step = tick_step(1 - low)
    return round(max(0.0, math.floor(low / step + 1e-9) * step), 4), step


def _check_interval(name: str, interval: tuple[float, float]) -> None:
    low, high = interval
    if not 0 <= low <= high <= 1:
        raise ValueError(f"{name} must be a (low, high) pair within 0 to 1, got {interval}")


def rates_chart(
    tpr: Band,
    tnr: Band,
    tpr_calibration: tuple[float, float],
    tnr_calibration: tuple[float, float],
    items: tuple[int, int],
    *,
    width: int = 560,
    chart_id: str = "watch-rates",
) -> RatesChart:
    """The judge's TPR and TNR on the audit stream now (band and estimate) beside the calibration's intervals,
    whose lower bound is the bound the alarm is tested against. `items`: (gold PASS items, gold FAIL items)."""
    if width < 400:
        raise ValueError(f"the rates chart needs a width of at least 400, got {width}")
    _check_interval("tpr_calibration", tpr_calibration)
    _check_interval("tnr_calibration", tnr_calibration)
    values = [tpr_calibration[0], tnr_calibration[0]]
    for band in (tpr, tnr):
        if band.estimate is not None:
            values += [band.lower, band.estimate]
    axis_min, step = rate_axis(values)
    track_left, track_right = RATE_LABEL_W, width - RATE_VALUE_W

    def x_of(rate: float) -> float:
        r = min(max(rate, axis_min), 1.0)
        return round(track_left + (r - axis_min) / (1 - axis_min) * (track_right - track_left), 1)

    rows = []
    specs = (
        (TPR, "the judge passes good outputs", tpr, tpr_calibration, items[0], "gold PASS"),
        (TNR, "the judge catches failures", tnr, tnr_calibration, items[1], "gold FAIL"),
    )
    for k, (name, meaning, band, calibration, n, kind) in enumerate(specs):
        top = RATE_TOP + k * RATE_ROW
        known = band.estimate is not None
        bound = calibration[0]
        if band.estimate is not None:
            now_text = f"{band.estimate:.2f} ({band.lower:.2f}–{band.upper:.2f})"
            now_words = f"about {band.estimate:.2f}, band {band.lower:.2f} to {band.upper:.2f}"
        else:
            now_text = now_words = f"no {kind} items yet"
        below = known and band.upper < bound
        label = (
            f"{name} ({meaning}) now: {now_words}, on {thousands(n)} {kind} items; calibration {calibration[0]:.2f}"
            f" to {calibration[1]:.2f}, alarm below {bound:.2f}" + ("; the whole band is below it" if below else "")
        )
        rows.append(
            RateRow(
                name=name,
                meaning=meaning,
                heading=f"{name}: {meaning} · {thousands(n)} {kind} item{'' if n == 1 else 's'}",
                top=top,
                now_y=top + 44,
                calibration_y=top + 64,
                estimate_x=x_of(band.estimate) if band.estimate is not None else None,
                band_x=x_of(band.lower),
                band_w=round(max(x_of(band.upper) - x_of(band.lower), 1.0), 1),
                now_text=now_text,
                message_w=round(len(now_text) * TEXT_EM * 12 / 11 + 12, 1),
                calibration_x=x_of(calibration[0]),
                calibration_w=round(max(x_of(calibration[1]) - x_of(calibration[0]), 1.0), 1),
                calibration_text=f"{calibration[0]:.2f}–{calibration[1]:.2f}",
                bound_x=x_of(bound),
                bound_label=f"alarm below {bound:.2f}",
                bound_anchor="end" if x_of(bound) + 50 > width else "middle",
                below=below,
                label=label,
            )
        )
    axis_y = RATE_TOP + 2 * RATE_ROW + 4
    count = round((1 - axis_min) / step)
    ticks = [Tick(x_of(axis_min + i * step), f"{axis_min + i * step:.2f}") for i in range(count + 1)]
    return RatesChart(
        id=chart_id,
        width=width,
        height=axis_y + 22,
        track_left=track_left,
        track_right=track_right,
        value_x=track_right + 10,
        axis_y=axis_y,
        axis_min=axis_min,
        ticks=ticks,
        rows=rows,
        title="The judge's TPR and TNR on the audit stream now, beside the calibration's",
        desc=(
            "For each rate, the upper bar is the band now with its estimate as a dot, the lower bar the calibration's "
            "interval; the dashed line is the calibration's lower bound, below which the alarm is tested."
        ),
        summary=" ".join(r.label + "." for r in rows),
    )
