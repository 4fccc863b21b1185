"""Geometry for the server-rendered SVG charts (templates draw them; no JavaScript, no CDN).

Pure functions: a report row in, numbers and labels out. Kappa runs from -1 to 1, but anything below
KAPPA_AXIS_MIN is "worse than chance" and drawn clamped at the left edge with an arrow, so the
interesting range (the tier bands 0.4 and 0.6) gets the width.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from calibration.stats.metrics import GATE_MIN_KAPPA, TREND_MIN_KAPPA

KAPPA_AXIS_MIN = -0.2
KAPPA_AXIS_MAX = 1.0
CHART_WIDTH = 300
PLOT_LEFT, PLOT_RIGHT = 8, 292


def x_of(kappa: float) -> float:
    k = min(max(kappa, KAPPA_AXIS_MIN), KAPPA_AXIS_MAX)
    share = (k - KAPPA_AXIS_MIN) / (KAPPA_AXIS_MAX - KAPPA_AXIS_MIN)
    return round(PLOT_LEFT + share * (PLOT_RIGHT - PLOT_LEFT), 1)


@dataclass(frozen=True)
class KappaChart:
    width: int
    bands: list[dict]
    ticks: list[dict]
    judge: dict | None  # x, low, high, clamped, label
    human: dict | None  # x, low, high, label
    empty_label: str

    @property
    def center(self) -> float:
        return self.width / 2

    @property
    def plot_left(self) -> int:
        return PLOT_LEFT

    @property
    def plot_right(self) -> int:
        return PLOT_RIGHT


def _interval(kappa: float, ci: tuple[float, float] | None) -> dict:
    low, high = ci if ci else (kappa, kappa)
    return {
        "x": x_of(kappa),
        "low": x_of(low),
        "high": x_of(high),
        "w": round(x_of(high) - x_of(low), 1),
        "clamped": kappa < KAPPA_AXIS_MIN,
    }


def kappa_chart(row) -> KappaChart:
    """Judge kappa with its interval, drawn against the tier bands and the human ceiling."""
    bands = [
        {"x": x_of(KAPPA_AXIS_MIN), "w": x_of(TREND_MIN_KAPPA) - x_of(KAPPA_AXIS_MIN), "tier": "unusable"},
        {"x": x_of(TREND_MIN_KAPPA), "w": x_of(GATE_MIN_KAPPA) - x_of(TREND_MIN_KAPPA), "tier": "trend"},
        {"x": x_of(GATE_MIN_KAPPA), "w": x_of(KAPPA_AXIS_MAX) - x_of(GATE_MIN_KAPPA), "tier": "gate"},
    ]
    ticks = [{"x": x_of(v), "label": f"{v:g}"} for v in (0.0, TREND_MIN_KAPPA, GATE_MIN_KAPPA, 1.0)]
    judge = None
    if row.judge.kappa is not None:
        judge = {**_interval(row.judge.kappa, row.judge.kappa_ci), "label": f"judge κ {row.judge.kappa:.2f}"}
    human = None
    if row.human.ceiling_value is not None:  # the order-free ceiling: mean pairwise kappa, else alpha
        symbol = "α" if row.human.ceiling_source == "alpha" else "κ"
        human = {
            **_interval(row.human.ceiling_value, row.human.ceiling_ci),
            "label": f"humans {symbol} {row.human.ceiling_value:.2f}",
        }
    if row.judge.n == 0:
        empty = "no data"
    elif row.judge.kappa is None:
        empty = "κ undefined"
    else:
        empty = ""
    return KappaChart(CHART_WIDTH, bands, ticks, judge, human, empty)


@dataclass(frozen=True)
class ConfusionCell:
    name: str
    label: str
    count: int
    share: float  # of n, for the colour intensity
    x: int
    y: int
    css: str
    drilldown: str | None  # which drilldown lists these items


def confusion_cells(row) -> list[ConfusionCell]:
    """The 2x2 confusion matrix with the false pass first (top left): rows are the judge's verdict
    (PASS, FAIL), columns the gold (FAIL, PASS), so the dangerous cell is the first one read."""
    n = max(row.judge.n, 1)
    layout = [
        ("false_pass", "false pass", row.judge.false_pass, 0, 0, "cm-fp", "false-pass"),
        ("true_pass", "true pass", row.judge.true_pass, 1, 0, "cm-ok", None),
        ("true_fail", "true fail", row.judge.true_fail, 0, 1, "cm-ok", None),
        ("false_fail", "false fail", row.judge.false_fail, 1, 1, "cm-ff", "false-fail"),
    ]
    return [ConfusionCell(name, label, c, c / n, col, r, css, dd) for name, label, c, col, r, css, dd in layout]


def opacity(share: float) -> str:
    """Heat: a visible floor so a zero cell still reads as a cell, then linear in the share."""
    return f"{0.08 + 0.8 * share:.2f}" if share > 0 else "0.04"


# --- The gate result: per gating criterion, the pass rate and its deciding lower bound against the minimum,
# and the ERROR rate against its maximum. Pure: the criteria as the gate's JSON gives them (GateResult.result).

GATE_PASS_WIDTH = 260
GATE_ERROR_WIDTH = 110
GATE_LEFT, GATE_RIGHT = 6, 254
ERROR_LEFT, ERROR_RIGHT = 4, 104


# The deciding bound's name in a table cell (policy.DECIDE_ON has the long form). A result stored before the
# policy had `decide_on` decided on the Wilson bound.
BOUND_NAMES = {"corrected_lower": "corrected", "wilson_lower": "Wilson", "audit": "audit"}


def deciding_bound_name(criterion: dict) -> str:
    return BOUND_NAMES.get(criterion.get("decide_on") or "wilson_lower", "Wilson")


def deciding_lower(criterion: dict) -> float | None:
    """The lower bound the criterion's policy decides on: the key its `decide_on` names when the result has
    one (a corrected bound, say), else the Wilson lower bound."""
    decide_on = criterion.get("decide_on") or "wilson_lower"
    # An audit's bound is under its own key: "audit" names the way of deciding, "audit_lower" the bound.
    return criterion.get("audit_lower" if decide_on == "audit" else decide_on, criterion.get("wilson_lower"))


def pass_axis_min(criteria: list[dict]) -> float:
    """One axis for every row of a result, starting a tenth below the lowest bound or minimum shown, so
    the part of the scale where gates are decided (0.8 to 1.0, usually) gets the width."""
    values = [v for c in criteria for v in (deciding_lower(c), c.get("min_pass_rate")) if v is not None]
    if not values:
        return 0.0
    return max(0.0, min(0.9, math.floor((min(values) - 0.05) * 10) / 10))


@dataclass(frozen=True)
class GateRow:
    criterion: str
    met: bool
    label: str  # for screen readers: every number the row draws
    axis_min: float
    lower: float | None  # the bound that decided, and its name: what the table shows beside the chart
    lower_name: str
    pass_x: float | None
    lower_x: float | None
    min_x: float
    min_label: str
    below_w: float  # width of the "below the minimum" band
    error_w: float
    error_max_x: float
    error_label: str
    ticks: list[dict]

    @property
    def width(self) -> int:
        return GATE_PASS_WIDTH

    @property
    def error_width(self) -> int:
        return GATE_ERROR_WIDTH

    @property
    def left(self) -> int:
        return GATE_LEFT

    @property
    def error_left(self) -> int:
        return ERROR_LEFT

    @property
    def error_track(self) -> int:
        return ERROR_RIGHT - ERROR_LEFT


def _x(value: float, axis_min: float) -> float:
    v = min(max(value, axis_min), 1.0)
    return round(GATE_LEFT + (v - axis_min) / (1.0 - axis_min) * (GATE_RIGHT - GATE_LEFT), 1)


def _pct(x: float | None) -> str:
    return "n/a" if x is None else f"{100 * x:.1f}%"


def gate_rows(criteria: list[dict]) -> list[GateRow]:
    axis_min = pass_axis_min(criteria)
    rows = []
    for c in criteria:
        lower, rate = deciding_lower(c), c.get("pass_rate")
        minimum = c.get("min_pass_rate")
        minimum = minimum if minimum is not None else 0.0
        max_error = c.get("max_error_rate") or 0.0
        error = c.get("error_rate") or 0.0
        # The ERROR track runs to twice the maximum (or the rate itself if higher), so the maximum sits mid-way.
        scale = max(2 * max_error, error, 1e-9)
        span = ERROR_RIGHT - ERROR_LEFT
        label = (
            f"{c.get('criterion')}: pass rate {_pct(rate)}, {deciding_bound_name(c)} lower bound {_pct(lower)}, "
            f"minimum {_pct(minimum)}; "
            f"ERROR rate {_pct(error)}, maximum {_pct(max_error)}; {'met' if c.get('met') else 'not met'}"
        )
        rows.append(
            GateRow(
                criterion=str(c.get("criterion", "")),
                met=bool(c.get("met")),
                label=label,
                axis_min=axis_min,
                lower=lower,
                lower_name=deciding_bound_name(c),
                pass_x=None if rate is None else _x(rate, axis_min),
                lower_x=None if lower is None else _x(lower, axis_min),
                min_x=_x(minimum, axis_min),
                min_label=f"min {minimum:g}",
                below_w=round(_x(minimum, axis_min) - GATE_LEFT, 1),
                error_w=round(min(error / scale, 1.0) * span, 1),
                error_max_x=round(ERROR_LEFT + min(max_error / scale, 1.0) * span, 1),
                error_label=f"ERROR {_pct(error)} (max {_pct(max_error)})",
                ticks=[{"x": _x(v, axis_min), "label": f"{v:g}"} for v in (axis_min, 1.0)],
            )
        )
    return rows
