"""Known-truth production streams for the watch's tests and bench (tests/calibration/stats/test_watch.py,
bench/watch.py): S streams at once, one step per audit label.

Outputs arrive one by one; each goes to the audit with probability p (so the outputs between two labels are a
geometric number), its true pass/fail is drawn at the step's pass rate, and the judge's verdict from its TPR
and TNR at that step. The rates are functions of the label index, so a change happens at a known label
(right after it) and the outputs after it are counted exactly.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from calibration.stats.watch.evidence import Floats, log_capital
from calibration.stats.watch.tracks import (
    HALF_LIFE,
    RESTART_EVERY,
    new_pass_track,
    new_rate_track,
    pass_step,
    rate_step,
)

# A rate as a function of the label index (0-based) and the stream (S,): the step's rates for each stream.
Rate = Callable[[int], Floats | float]


@dataclass(frozen=True)
class Streams:
    pass_rate: Rate
    tpr: Rate
    tnr: Rate
    p: float


@dataclass(frozen=True)
class FirstAlarms:
    """The first alarm of each stream's three tests: the label and the output at which it fired (-1 if
    none), and the estimated change (the label after which the evidence began)."""

    pass_label: Floats
    pass_output: Floats
    pass_since: Floats
    tpr_label: Floats
    tnr_label: Floats
    tnr_output: Floats
    outputs_at: Floats  # (S, labels + 1): the outputs before each label index, to convert a change's label


def run_streams(
    streams: Streams,
    *,
    size: int,
    labels: int,
    minimum: float,
    tpr_lower: float,
    tnr_lower: float,
    alpha: float,
    seed: int,
    half_life: float = HALF_LIFE,
    restart_every: int = RESTART_EVERY,
) -> FirstAlarms:
    rng = np.random.default_rng(seed)
    p = streams.p
    shape = (size,)
    track = new_pass_track(np.full(shape, minimum), np.ones(shape))
    tpr = new_rate_track(np.full(shape, tpr_lower), np.ones(shape))
    tnr = new_rate_track(np.full(shape, tnr_lower), np.ones(shape))
    threshold = np.log(1 / alpha)
    first = {name: np.full(shape, -1.0) for name in ("pass", "pass_out", "since", "tpr", "tnr", "tnr_out")}
    outputs_at = np.zeros((size, labels + 1))
    outputs = np.zeros(shape)
    since_tnr = np.zeros(shape)  # outputs since the last gold FAIL item, for the TNR test's clock
    ones = np.ones(shape)
    for t in range(labels):
        theta = np.broadcast_to(np.asarray(streams.pass_rate(t), dtype=float), shape)
        a = np.broadcast_to(np.asarray(streams.tpr(t), dtype=float), shape)
        b = np.broadcast_to(np.asarray(streams.tnr(t), dtype=float), shape)
        gap = rng.geometric(p, size=size) - 1.0  # outputs not audited before the next audited one
        judged_pass = theta * a + (1 - theta) * (1 - b)
        passes = rng.binomial(gap.astype(np.int64), judged_pass).astype(float)
        gold = (rng.random(size) < theta).astype(float)
        verdict = np.where(gold == 1, rng.random(size) < a, rng.random(size) >= b).astype(float)
        track = pass_step(
            track,
            p=p,
            passes=passes,
            fails=gap - passes,
            unjudged=np.zeros(shape),
            audited=ones,
            verdict=verdict,
            gold=gold,
            half_life=half_life,
            restart_every=restart_every,
        )
        outputs = outputs + gap + 1
        outputs_at[:, t + 1] = outputs
        since_tnr = since_tnr + gap + 1
        tpr = rate_step(tpr, hit=verdict, active=gold, half_life=half_life, restart_every=restart_every)
        tnr = rate_step(
            tnr, hit=1 - verdict, outputs=since_tnr, active=1 - gold, half_life=half_life, restart_every=restart_every
        )
        since_tnr = np.where(gold == 0, 0.0, since_tnr)
        for name, ev in (("pass", track.evidence), ("tpr", tpr.evidence), ("tnr", tnr.evidence)):
            new = (first[name] < 0) & (log_capital(ev) >= threshold)
            first[name] = np.where(new, t + 1.0, first[name])
            if name == "pass":
                first["pass_out"] = np.where(new, outputs, first["pass_out"])
                first["since"] = np.where(new, ev.low_at, first["since"])
            if name == "tnr":
                first["tnr_out"] = np.where(new, outputs, first["tnr_out"])
    return FirstAlarms(
        pass_label=first["pass"],
        pass_output=first["pass_out"],
        pass_since=first["since"],
        tpr_label=first["tpr"],
        tnr_label=first["tnr"],
        tnr_output=first["tnr_out"],
        outputs_at=outputs_at,
    )


def wilson_peeked(pass_rate: Rate, *, size: int, labels: int, minimum: float, seed: int) -> float:
    """The negative control: a fixed-sample test peeked at after every audit label (the one-sided 95% Wilson
    upper bound of the labels' pass rate, an alarm when it is below the minimum), on `size` streams of gold
    drawn at `pass_rate`. Returns the share of streams that ever alarmed: valid at each fixed n, not over
    every n at once."""
    rng = np.random.default_rng(seed)
    z = 1.6448536269514722  # one-sided 95%
    passes = np.zeros(size)
    alarmed = np.zeros(size, dtype=bool)
    for t in range(labels):
        passes += rng.random(size) < pass_rate(t)
        n = t + 1
        phat = passes / n
        centre = (phat + z * z / (2 * n)) / (1 + z * z / n)
        half = z * np.sqrt(phat * (1 - phat) / n + z * z / (4 * n * n)) / (1 + z * z / n)
        alarmed |= centre + half < minimum
    return float(alarmed.mean())
