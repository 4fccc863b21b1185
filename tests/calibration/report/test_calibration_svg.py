"""Geometry of the server-rendered charts: pure, no database."""

from __future__ import annotations

from types import SimpleNamespace

from calibration.report.svg import KAPPA_AXIS_MIN, PLOT_LEFT, PLOT_RIGHT, confusion_cells, kappa_chart, opacity, x_of

# The figures the chart and the matrix read, by the report's key, and where each lives in a row.
PARTS = {
    "n": ("judge", "n"),
    "kappa": ("judge", "kappa"),
    "kappa_ci": ("judge", "kappa_ci"),
    "true_pass": ("judge", "true_pass"),
    "false_pass": ("judge", "false_pass"),
    "true_fail": ("judge", "true_fail"),
    "false_fail": ("judge", "false_fail"),
    "human_kappa": ("human", "kappa"),
    "human_kappa_ci": ("human", "kappa_ci"),
    "human_ceiling": ("human", "ceiling_value"),
    "human_ceiling_ci": ("human", "ceiling_ci"),
    "human_ceiling_source": ("human", "ceiling_source"),
}


def row(**kw):
    base = dict(
        n=200,
        kappa=0.71,
        kappa_ci=(0.6, 0.82),
        human_kappa=0.3,  # annotator A vs B: not what the chart draws (it depends on who is "A")
        human_kappa_ci=(0.2, 0.4),
        human_ceiling=0.8,
        human_ceiling_ci=(0.74, 0.86),
        human_ceiling_source="mean pairwise kappa",
        true_pass=145,
        false_pass=15,
        true_fail=35,
        false_fail=5,
    )
    parts: dict[str, dict] = {"judge": {}, "human": {}}
    for key, value in {**base, **kw}.items():
        part, attribute = PARTS[key]
        parts[part][attribute] = value
    return SimpleNamespace(**{part: SimpleNamespace(**figures) for part, figures in parts.items()})


def test_the_axis_keeps_the_tier_bands_in_order_and_clamps_worse_than_chance():
    assert x_of(KAPPA_AXIS_MIN) == PLOT_LEFT and x_of(1.0) == PLOT_RIGHT
    assert x_of(0.0) < x_of(0.4) < x_of(0.6) < x_of(1.0)
    assert x_of(-0.9) == PLOT_LEFT and x_of(1.5) == PLOT_RIGHT
    chart = kappa_chart(row(kappa=-0.5, kappa_ci=(-0.7, -0.3)))
    assert chart.judge["clamped"] and chart.judge["x"] == PLOT_LEFT
    assert [b["tier"] for b in chart.bands] == ["unusable", "trend", "gate"]


def test_the_chart_draws_judge_and_human_ceiling_or_says_why_not():
    chart = kappa_chart(row())
    assert chart.judge["low"] < chart.judge["x"] < chart.judge["high"]
    assert chart.human["x"] == x_of(0.8) and chart.human["w"] > 0  # the order-free ceiling, not A vs B
    assert chart.human["label"] == "humans κ 0.80"
    assert kappa_chart(row(human_ceiling_source="alpha")).human["label"] == "humans α 0.80"
    assert chart.empty_label == ""
    empty = kappa_chart(row(n=0, kappa=None, kappa_ci=None, human_ceiling=None, human_ceiling_ci=None))
    assert empty.judge is None and empty.human is None and empty.empty_label == "no data"
    assert kappa_chart(row(kappa=None, kappa_ci=None)).empty_label == "κ undefined"


def test_the_false_pass_is_the_first_cell_and_links_to_its_drilldown():
    cells = confusion_cells(row())
    assert [c.name for c in cells] == ["false_pass", "true_pass", "true_fail", "false_fail"]
    first = cells[0]
    assert (first.x, first.y, first.count, first.drilldown, first.css) == (0, 0, 15, "false-pass", "cm-fp")
    assert cells[3].drilldown == "false-fail" and cells[1].drilldown is None
    assert abs(sum(c.share for c in cells) - 1) < 1e-12
    assert opacity(0) == "0.04" and float(opacity(1.0)) > float(opacity(0.1))
