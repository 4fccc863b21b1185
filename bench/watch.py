"""The watch's bench (issue 39, item 6): simulated production streams with a known change at a known time.

    python bench/watch.py                  # 500 streams per scenario (about 4 minutes)
    python bench/watch.py --streams 100    # a quick look

Prints, per scenario, the detection delay (audit labels and outputs after the change to the first alarm:
median and 90th percentile, over all streams, a stream that never alarms counting as never) and the false-alarm
rate over 20,000 audit labels with no change, beside the goals: false alarms <= alpha; a -0.10 move detected
within 200 audit labels (median). A fixed-sample test peeked at after every label (the one-sided Wilson bound of
the labels' pass rate, below the minimum) runs on the same no-change streams as a negative control.
docs/calibration.md ("The watch: anytime-valid monitoring") quotes its figures.
"""

from __future__ import annotations

import argparse
import math
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from calibration.stats.watch.simulation import Streams, run_streams, wilson_peeked  # noqa: E402

P = 0.01  # the audit's share
ALPHA = 0.05
MINIMUM = 0.80
BASE = 0.82  # the pass rate before a change: the release cleared the minimum by 2 points
# The calibration's lower bounds: 0.05 below the judge's TPR and TNR (a calibration of a few hundred items).
BOUND_GAP = 0.05
JUDGES = {"judge TPR 0.90, TNR 0.80": (0.90, 0.80), "judge TPR 0.95, TNR 0.90": (0.95, 0.90)}
CHANGE_AT = 2_000  # audit labels before the change (about 200,000 outputs)
LATE_CHANGE_AT = 10_000
AFTER = 5_000  # audit labels watched after the change
NULL_LABELS = 20_000


def step(before: float, after: float, at: int):  # type: ignore[no-untyped-def]
    return lambda t: before if t < at else after


def quantiles(delays: np.ndarray) -> tuple[str, str]:
    """Median and 90th percentile, a stream that never alarmed counting as never."""
    out = []
    for q in (50, 90):
        value = np.quantile(delays, q / 100, method="inverted_cdf")
        out.append("never" if math.isinf(value) else f"{value:,.0f}")
    return out[0], out[1]


def change_row(name: str, judge: tuple[float, float], what: str, delta: float, at: int, args) -> None:  # type: ignore[no-untyped-def]
    tpr, tnr = judge
    pass_rate = step(BASE, BASE + delta, at) if what == "pass" else step(BASE, BASE, 0)
    tnr_rate = step(tnr, tnr + delta, at) if what == "tnr" else step(tnr, tnr, 0)
    streams = Streams(pass_rate=pass_rate, tpr=step(tpr, tpr, 0), tnr=tnr_rate, p=P)
    first = run_streams(
        streams,
        size=args.streams,
        labels=at + AFTER,
        minimum=MINIMUM,
        tpr_lower=tpr - BOUND_GAP,
        tnr_lower=tnr - BOUND_GAP,
        alpha=ALPHA,
        seed=args.seed,
    )
    label = first.pass_label if what == "pass" else first.tnr_label
    output = first.pass_output if what == "pass" else first.tnr_output
    early = (label > 0) & (label <= at)
    detected = label > at
    labels_after = np.where(detected, label - at, np.inf)
    outputs_after = np.where(detected, output - first.outputs_at[:, at], np.inf)
    l50, l90 = quantiles(labels_after)
    o50, o90 = quantiles(outputs_after)
    goal = ""
    if what == "pass" and delta <= -0.10:
        med = np.percentile(labels_after, 50)
        goal = f"  goal median <= 200 labels: {'met' if med <= 200 else 'NOT met'}"
    since = ""
    if what == "pass" and detected.any():
        since = f"; change dated at label {np.median(first.pass_since[detected]):,.0f} (median; true {at:,})"
    print(
        f"  {name:<34} labels after: median {l50:>6}, p90 {l90:>6}; outputs after: median {o50:>8}, p90 {o90:>8}; "
        f"detected {detected.mean():.0%}, alarm before the change {early.mean():.1%}{since}{goal}"
    )


def null_row(name: str, streams: Streams, bounds: tuple[float, float], args) -> None:  # type: ignore[no-untyped-def]
    first = run_streams(
        streams,
        size=args.streams,
        labels=NULL_LABELS,
        minimum=MINIMUM,
        tpr_lower=bounds[0],
        tnr_lower=bounds[1],
        alpha=ALPHA,
        seed=args.seed + 1,
    )
    n = args.streams
    rates = [(first.pass_label > 0).mean(), (first.tpr_label > 0).mean(), (first.tnr_label > 0).mean()]
    # The rate's 95% upper bound (a binomial: Wilson's), to read "<= alpha" against the simulation's noise.
    worst = max(rates)
    upper = (worst + 1.92 / n + 1.96 * math.sqrt(worst * (1 - worst) / n + 0.96 / n**2)) / (1 + 3.84 / n)
    peek = wilson_peeked(streams.pass_rate, size=n, labels=NULL_LABELS, minimum=MINIMUM, seed=args.seed + 7)
    met = "met" if max(rates) <= ALPHA else "NOT met"
    print(
        f"  {name:<52} pass rate {rates[0]:.1%}, TPR {rates[1]:.1%}, TNR {rates[2]:.1%} "
        f"(highest's 95% bound {upper:.1%}; goal <= {ALPHA:.0%}: {met}); "
        f"negative control, Wilson peeked every label: {peek:.1%}"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--streams", type=int, default=500, help="simulated streams per scenario (default 500)")
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    started = time.time()
    print(
        f"Settings: audit share p = {P}, alpha = {ALPHA} per test, minimum {MINIMUM}, base pass rate {BASE}, "
        f"the calibration's lower bounds {BOUND_GAP} below the judge's TPR and TNR; {args.streams} streams per "
        f"scenario, seed {args.seed}. Changes after audit label {CHANGE_AT:,} (and {LATE_CHANGE_AT:,}), "
        f"watched {AFTER:,} labels on."
    )
    for judge_name, judge in JUDGES.items():
        print(f"\nDetection delay, {judge_name}:")
        change_row("pass rate -0.05 (0.82 -> 0.77)", judge, "pass", -0.05, CHANGE_AT, args)
        change_row("pass rate -0.10 (0.82 -> 0.72)", judge, "pass", -0.10, CHANGE_AT, args)
        tnr = judge[1]
        change_row(f"judge's TNR -0.10 ({tnr:.2f} -> {tnr - 0.1:.2f})", judge, "tnr", -0.10, CHANGE_AT, args)
        change_row(f"pass rate -0.10 after {LATE_CHANGE_AT:,} labels", judge, "pass", -0.10, LATE_CHANGE_AT, args)
    tpr, tnr = JUDGES["judge TPR 0.90, TNR 0.80"]
    bounds = (tpr - BOUND_GAP, tnr - BOUND_GAP)
    print(f"\nFalse alarms over {NULL_LABELS:,} audit labels with no change (goal <= {ALPHA:.0%} per test):")
    fixed = Streams(step(BASE, BASE, 0), step(tpr, tpr, 0), step(tnr, tnr, 0), P)
    null_row(f"pass rate {BASE}, judge TPR {tpr} TNR {tnr}", fixed, bounds, args)
    lo_tpr, lo_tnr = bounds
    at_bounds = Streams(step(MINIMUM, MINIMUM, 0), step(lo_tpr, lo_tpr, 0), step(lo_tnr, lo_tnr, 0), P)
    null_row(f"at the bounds: pass rate {MINIMUM}, TPR {lo_tpr:.2f}, TNR {lo_tnr:.2f}", at_bounds, bounds, args)
    wave = lambda t: MINIMUM + 0.05 * (1 + math.sin(2 * math.pi * t / 3_000)) / 2  # noqa: E731
    moving = Streams(wave, step(tpr, tpr, 0), step(tnr, tnr, 0), P)
    null_row("moving, never below: pass rate 0.80 to 0.85 (period 3,000)", moving, bounds, args)
    print(f"\n{time.time() - started:.0f} s")


if __name__ == "__main__":
    main()
