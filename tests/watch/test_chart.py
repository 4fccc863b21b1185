"""The watch's charts: where the geometry puts things (hand-worked), what the templates draw (parsed as XML), and
that a reader of the picture gets the numbers back."""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET
from dataclasses import replace

import numpy as np
import pytest
from django.template.loader import render_to_string

from calibration.stats.watch import (
    PASS_RATE,
    TNR,
    Alarm,
    AuditedOutput,
    Band,
    BandPoint,
    Outputs,
    WatchSettings,
    replay,
)
from watch.chart import buckets, extremes, nice_step, pass_rate_chart, rates_chart, y_range

SVG = "{http://www.w3.org/2000/svg}"


def point(labels: int, estimate: float | None = 0.85, lower: float = 0.70, upper: float = 0.95) -> BandPoint:
    return BandPoint(labels=labels, outputs=100 * labels, estimate=estimate, lower=lower, upper=upper)


def ten_points() -> list[BandPoint]:
    return [point(i) for i in range(1, 11)]


def alarm(what: str = PASS_RATE, **changes) -> Alarm:
    base = Alarm(
        what=what,
        bound=0.80,
        estimate=0.72,
        lower=0.62,
        upper=0.84,
        at_labels=4,
        at_outputs=400,
        since_labels=2,
        since_outputs=200,
        evidence=21.0,
        advice="look at what changed",
    )
    return replace(base, **changes)


def draw_pass_rate(chart) -> ET.Element:
    return ET.fromstring(render_to_string("watch/_pass_rate_chart.html", {"chart": chart}))


def draw_rates(chart) -> ET.Element:
    return ET.fromstring(render_to_string("watch/_rates_chart.html", {"chart": chart}))


def path_vertices(d: str) -> list[tuple[float, float]]:
    return [(float(x), float(y)) for x, y in re.findall(r"[ML](-?[\d.]+),(-?[\d.]+)", d)]


def read_minimum(root: ET.Element) -> float:
    """What a reader takes from the picture: the dashed line's height, read off the y axis's labelled ticks."""
    svg = root.find(f"{SVG}svg")
    assert svg is not None
    texts = svg.findall(f"{SVG}text")
    ticks = [(float(t.get("y", "")), float(t.text or "")) for t in texts if t.get("text-anchor") == "end"]
    (y0, v0), (y1, v1) = ticks[0], ticks[-1]
    dashed = [ln for ln in svg.findall(f"{SVG}line") if ln.get("stroke-dasharray") == "5 3"]
    assert len(dashed) == 1
    y = float(dashed[0].get("y1", ""))
    return round(v0 + (y - y0) / (y1 - y0) * (v1 - v0), 3)  # a tenth of a unit is about 0.0001


# --- geometry, by hand ---------------------------------------------------------------------------------------


def test_the_y_axis_zooms_to_the_band_the_estimate_and_the_minimum():
    # Lowest 0.70 (the band), highest 0.95: padded 0.68 to 0.97, a span of 0.29, so ticks 0.05 apart,
    # snapped out to 0.65 and 1.00.
    assert y_range(ten_points(), 0.80) == (0.65, 1.0, 0.05)


def test_the_y_axis_never_zooms_closer_than_a_span_of_a_fifth():
    flat = [point(i, 0.9, 0.89, 0.91) for i in range(1, 5)]
    assert y_range(flat, 0.90) == (0.8, 1.0, 0.05)  # 0.88 to 0.92 widened round 0.90, then moved under 1
    assert y_range([], 0.10) == (0.0, 0.2, 0.05)


def test_a_rate_and_the_minimum_land_where_worked_by_hand():
    chart = pass_rate_chart(ten_points(), 0.80, [])
    # The plot runs from y 26 (legend 14 + 12, no alarm rows) to 274 (320 - 46): 248 units for 0.65 to 1.00.
    assert (chart.top, chart.bottom, chart.y_min, chart.y_max) == (26, 274, 0.65, 1.0)
    assert chart.minimum_y == round(274 - 0.15 / 0.35 * 248, 1) == 167.7
    # The estimate 0.85 at label 5 of 10: x from 56 to 904 (1000 - 96), so 56 + 0.5 * 848.
    assert (480.0, 132.3) in path_vertices(chart.estimate_path)
    assert chart.now == (904.0, 132.3)
    assert [t.label for t in chart.y_ticks] == ["0.65", "0.70", "0.75", "0.80", "0.85", "0.90", "0.95", "1.00"]
    assert chart.y_ticks[3].at == 167.7


def test_x_ticks_are_round_numbers_with_thousands_separators():
    chart = pass_rate_chart([point(i) for i in range(1, 20_001)], 0.80, [])
    assert [t.label for t in chart.x_ticks] == ["0", "5,000", "10,000", "15,000", "20,000"]
    assert chart.x_ticks[-1].at == chart.right
    assert nice_step(1_600, 9) == 200 and nice_step(7, 9) == 1 and nice_step(20_000, 9) == 5_000


def test_a_long_history_is_cut_into_buckets_that_keep_each_lines_extremes_in_order():
    # 10 into 4: edges 0, round(2.5) = 2, 5, round(7.5) = 8, 10.
    assert buckets(10, 4) == [range(0, 2), range(2, 5), range(5, 8), range(8, 10)]
    assert buckets(3, 4) == [range(0, 1), range(1, 2), range(2, 3)]
    # The lowest (index 1) and the first of the highest (index 2), in the order they came.
    assert extremes([0.5, 0.2, 0.9, 0.9], range(4)) == [1, 2]
    assert extremes([0.9, 0.2], range(2)) == [0, 1]
    assert extremes([None, 0.4, None], range(3)) == [1]
    assert extremes([None, None], range(2)) == []


def test_downsampling_keeps_a_one_label_dip():
    points = [point(i) for i in range(1, 20_001)]
    points[12_344] = point(12_345, estimate=0.40, lower=0.30, upper=0.50)
    # The negative control: taking every 100th point, the dip is gone.
    assert all(p.estimate == 0.85 for p in points[::100])
    chart = pass_rate_chart(points, 0.80, [])
    line = path_vertices(chart.estimate_path)
    assert len(line) <= 400 and len(chart.columns) == 200
    x_dip = round(chart.left + 12_345 / 20_000 * (chart.right - chart.left), 1)
    lowest = max(line, key=lambda v: v[1])  # the lowest on the page has the largest y
    assert lowest[0] == x_dip
    # 0.40 is in the y axis's range (every estimate is): it is drawn at its own height, not clamped.
    assert chart.y_min <= 0.40
    y_dip = round(chart.bottom - (0.40 - chart.y_min) / (chart.y_max - chart.y_min) * (chart.bottom - chart.top), 1)
    assert lowest[1] == y_dip
    # The band's upper edge dips with it.
    band = path_vertices(chart.band_path)
    assert any(x == x_dip and y > chart.minimum_y for x, y in band[: len(band) // 2])
    # Its column's tooltip says so, with the outputs.
    column = next(c for c in chart.columns if c.x <= x_dip <= c.x + c.w)
    assert "estimate 0.40 to 0.85" in column.title and "upper edge as low as 0.50" in column.title
    assert "(output 1,230,100–1,240,000)" in column.title


def test_alarms_are_marked_when_they_fired_and_shade_back_to_the_change():
    tnr = alarm(TNR, at_labels=3, at_outputs=700, since_labels=1, since_outputs=250, bound=0.7)
    chart = pass_rate_chart(ten_points(), 0.80, [alarm(), tnr])
    pass_mark, tnr_mark = chart.alarms
    # The pass rate's alarm counts audit labels: fired at label 4, the change after label 2.
    assert (pass_mark.x, pass_mark.since_x, pass_mark.shade_w) == (395.2, 225.6, 169.6)
    # The TNR's counts gold FAIL items; its place comes from its outputs: output 700 is audit label 7's, and
    # output 250 falls after label 2's (200), before label 3's.
    assert (tnr_mark.x, tnr_mark.since_x) == (649.6, 225.6)
    assert tnr_mark.label == "TNR alarm (since about audit label 2)"
    # Two alarms take two rows above the plot, under the legend.
    assert (pass_mark.label_y, tnr_mark.label_y, chart.top) == (28, 42, 54)
    assert "Alarm on the TNR at audit label 7 (output 700)" in chart.summary


def test_an_alarm_near_the_right_edge_keeps_its_label_inside():
    chart = pass_rate_chart(ten_points(), 0.80, [alarm(at_labels=10, at_outputs=1000)])
    assert chart.alarms[0].anchor == "end"
    chart = pass_rate_chart(ten_points(), 0.80, [alarm(at_labels=0, since_labels=0)])
    assert chart.alarms[0].anchor == "start"


def test_the_line_starts_at_the_first_estimate_and_the_legend_shows_alarm_keys_only_with_an_alarm():
    # A watch whose first audited outputs had no usable verdict has no estimate yet: no line there.
    points = [point(1, None), point(2, None)] + [point(i) for i in range(3, 11)]
    chart = pass_rate_chart(points, 0.80, [])
    line = path_vertices(chart.estimate_path)
    assert line[0] == (round(56 + 0.3 * 848, 1), 132.3) and chart.estimate_path.startswith("M")
    assert chart.estimate_path.count("M") == 1 and len(line) == 8
    assert [k.kind for k in chart.legend] == ["band", "estimate", "minimum"]
    chart = pass_rate_chart(points, 0.80, [alarm()])
    assert [k.kind for k in chart.legend] == ["band", "estimate", "minimum", "alarm", "change"]


def test_a_single_label_is_drawn_as_a_bar_and_a_dot():
    chart = pass_rate_chart([point(1, 0.9, 0.0, 1.0)], 0.80, [])
    assert len(path_vertices(chart.band_path)) == 4 and chart.now is not None
    assert chart.clipped is False and (chart.y_min, chart.y_max) == (0.0, 1.0)


def test_a_band_beyond_the_zoomed_axis_is_drawn_at_its_edge_and_said_so():
    points = [point(1, 0.9, 0.0, 1.0)] + [point(i) for i in range(2, 101)]
    chart = pass_rate_chart(points, 0.80, [])
    assert chart.clipped and chart.y_min == 0.65  # the first label's 0 to 1 is in the extreme 5%
    assert chart.legend[0].text == "band (cut at the chart's edges)"
    assert max(y for _, y in path_vertices(chart.band_path)) == chart.bottom


def test_a_narrow_chart_is_refused_in_words():
    with pytest.raises(ValueError, match="at least 600"):
        pass_rate_chart([], 0.8, [], width=500)
    with pytest.raises(ValueError, match="tnr_calibration must be a \\(low, high\\) pair"):
        rates_chart(Band(None, 0, 1), Band(None, 0, 1), (0.8, 0.9), (0.9, 0.8), (0, 0))


# --- the templates --------------------------------------------------------------------------------------------


def test_the_pass_rate_chart_is_valid_svg_with_title_desc_and_a_summary():
    root = draw_pass_rate(pass_rate_chart(ten_points(), 0.80, [alarm()]))
    svg = root.find(f"{SVG}svg")
    assert svg is not None and svg.get("role") == "img"
    title = svg.find(f"{SVG}title")
    assert title is not None and title.get("id") == svg.get("aria-labelledby")
    assert title.text == "The pass rate over time, against the minimum 0.80"
    assert svg.find(f"{SVG}desc") is not None
    summary = root.find("p")
    assert summary is not None and summary.get("class") == "sr-only"
    assert summary.text == (
        "After 10 audit labels (1,000 outputs) the pass rate is about 0.85, band 0.70 to 0.95; the release's "
        "minimum is 0.80. The lowest estimate was 0.85, at audit label 1. Alarm on the pass rate at audit label 4 "
        "(output 400), the change since about audit label 2."
    )
    assert read_minimum(root) == 0.80


def test_a_moved_minimum_is_seen_in_the_picture():
    # The negative control of the reading above: the same history against 0.75 reads 0.75, not 0.80.
    assert read_minimum(draw_pass_rate(pass_rate_chart(ten_points(), 0.75, []))) == 0.75
    assert read_minimum(draw_pass_rate(pass_rate_chart(ten_points(), 0.80, []))) == 0.80


def test_text_in_the_chart_is_escaped():
    sly = alarm(advice='<script>alert("x")</script> & more')
    html = render_to_string("watch/_pass_rate_chart.html", {"chart": pass_rate_chart(ten_points(), 0.8, [sly])})
    assert "<script>" not in html and "&lt;script&gt;" in html
    titles = [t.text or "" for t in ET.fromstring(html).iter(f"{SVG}title")]
    assert any(t.endswith('<script>alert("x")</script> & more.') for t in titles)


def test_every_column_has_a_tooltip_with_its_labels_and_outputs():
    root = draw_pass_rate(pass_rate_chart(ten_points(), 0.80, []))
    tips = [t.text for t in root.iter(f"{SVG}title") if (t.text or "").startswith("audit label")]
    assert len(tips) == 10
    assert tips[4] == "audit label 5 (output 500): estimate 0.85, band 0.70 to 0.95"


def test_an_empty_history_says_so_plainly():
    chart = pass_rate_chart([], 0.80, [])
    assert chart.band_path == chart.estimate_path == "" and chart.x_ticks == [] and chart.now is None
    root = draw_pass_rate(chart)
    texts = [t.text for t in root.iter(f"{SVG}text")]
    assert "No audit labels yet: the band appears after the first one is settled." in texts
    assert not [p for p in root.iter(f"{SVG}path")]
    assert read_minimum(root) == 0.80  # the minimum is still shown, in the middle of its axis (0.70 to 0.90)
    summary = root.find("p")
    assert summary is not None and summary.text == "No audit labels yet. The release's minimum pass rate is 0.80."


def test_the_rates_chart_places_the_bands_and_the_calibrations_bound_by_hand():
    tpr, tnr = Band(0.90, 0.80, 0.98), Band(0.60, 0.45, 0.66)
    chart = rates_chart(tpr, tnr, (0.85, 0.94), (0.70, 0.86), (1_266, 334))
    # Lowest value 0.45, less 0.05: 0.40, a span of 0.6, so ticks 0.1 apart from 0.4; the track from 92 to
    # 410 (560 - 150): 318 units for 0.6.
    assert chart.axis_min == 0.4 and [t.label for t in chart.ticks][::3] == ["0.40", "0.70", "1.00"]
    tpr_row, tnr_row = chart.rows
    assert tpr_row.bound_x == round(92 + 0.45 / 0.6 * 318, 1) == 330.5
    # 0.90 at 92 + 0.5 / 0.6 * 318; the band from 0.80 (92 + 212) to 0.98 (92 + 307.4).
    assert (tpr_row.estimate_x, tpr_row.band_x, tpr_row.band_w) == (357.0, 304.0, 95.4)
    assert tpr_row.heading == "TPR: the judge passes good outputs · 1,266 gold PASS items"
    assert (tpr_row.now_text, tpr_row.calibration_text, tpr_row.bound_label) == (
        "0.90 (0.80–0.98)",
        "0.85–0.94",
        "alarm below 0.85",
    )
    # The TNR's whole band is below the calibration's lower bound: drawn as such and said.
    assert tnr_row.below and not tpr_row.below
    assert chart.summary.endswith("calibration 0.70 to 0.86, alarm below 0.70; the whole band is below it.")


def test_the_rates_chart_without_labels_says_so_and_draws_no_band():
    empty = Band(None, 0.0, 1.0)
    chart = rates_chart(empty, empty, (0.85, 0.94), (0.70, 0.86), (0, 0))
    root = draw_rates(chart)
    texts = [t.text for t in root.iter(f"{SVG}text")]
    assert "no gold PASS items yet" in texts and "no gold FAIL items yet" in texts
    assert not list(root.iter(f"{SVG}circle"))
    assert chart.rows[0].heading.endswith("0 gold PASS items")
    assert chart.axis_min == 0.6  # from the calibration's bounds alone: 0.70 less 0.05, rounded down to 0.1


def test_the_rates_chart_is_valid_svg_and_marks_each_bound():
    root = draw_rates(rates_chart(Band(0.9, 0.8, 0.98), Band(0.8, 0.68, 0.84), (0.85, 0.94), (0.7, 0.86), (9, 3)))
    svg = root.find(f"{SVG}svg")
    assert svg is not None and svg.get("role") == "img"
    bounds = [ln for ln in root.iter(f"{SVG}line") if ln.get("stroke-dasharray") == "4 2"]
    assert len(bounds) == 2
    labels = [t.text for t in root.iter(f"{SVG}text") if (t.text or "").startswith("alarm below")]
    assert labels == ["alarm below 0.85", "alarm below 0.70"]


# --- with a real watch ----------------------------------------------------------------------------------------


def test_a_replayed_drop_draws_its_alarm_where_the_watch_raised_it():
    rng = np.random.default_rng(3)
    observations: list[Outputs | AuditedOutput] = []
    for t in range(400):
        theta = 0.9 if t < 150 else 0.5
        gap = int(rng.geometric(0.05) - 1)
        judged = int(rng.binomial(gap, theta * 0.95 + (1 - theta) * 0.1))
        observations.append(Outputs(passes=judged, fails=gap - judged))
        gold = int(rng.random() < theta)
        observations.append(
            AuditedOutput(verdict=int(rng.random() < 0.95) if gold else int(rng.random() < 0.1), gold=gold)
        )
    settings = WatchSettings(minimum=0.8, audit_share=0.05, tpr_lower=0.85, tnr_lower=0.85)
    _state, points, alarms = replay(settings, observations)
    fired = [a for a in alarms if a.what == PASS_RATE]
    assert len(fired) == 1 and 150 < fired[0].at_labels < 400
    chart = pass_rate_chart(points, settings.minimum, fired)
    mark = chart.alarms[0]
    assert mark.x == round(chart.left + fired[0].at_labels / 400 * (chart.right - chart.left), 1)
    root = draw_pass_rate(chart)
    assert any((t.text or "").startswith("The pass rate fell below 0.80") for t in root.iter(f"{SVG}title"))
    assert read_minimum(root) == 0.80
