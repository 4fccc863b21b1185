"""The two kinds of watched rate, vectorized over S copies: the production pass rate (PPI, from the judge's
verdicts on every output and the audit stream's gold) and a rate on the audit stream alone (the judge's TPR
on gold PASS items, its TNR on gold FAIL items).

Each copy has a bound and a side: side +1 tests "the rate has stayed >= bound" (the alarm, and the band's upper
edge), side -1 tests "the rate has stayed <= bound" (the band's lower edge). Evidence: evidence.py.

**The pass rate's observation** (one per output, in arrival order). Each output gets the judge's verdict f
(1 PASS, 0 FAIL; an output without a usable verdict gets f = the bound, a constant fixed before it arrives)
and, with a known probability p chosen independently of everything (xi = 1), goes to the audit stream and gets
gold y. The observation is the streaming PPI++ one,

    x = lam f + (xi / p) (y - lam f),

whose conditional mean is the output's true pass rate for any lam fixed before the output (E[xi / p] = 1,
xi independent of (f, y)): the judge's verdicts carry the estimate and the audited outputs remove their bias.
A judge that agrees with people makes (y - lam f) mostly 0 and the variance small; a bad judge costs labels,
never validity. lam is the precision of the judge's PASS verdicts on the recent labels (shrunk towards 0), the
weight that minimises E[(y - lam f)^2], which dominates the variance when p is small:
Var(x) = Var(y) + (1 - p) / p * E[(y - lam f)^2].

The range: x <= 1/p always (gold PASS that the judge failed, audited), and x >= lam (1 - 1/p) (gold FAIL that
the judge passed, audited). The drop test's bet is capped at BET_SHARE / (1/p - bound), the rise test's at
BET_SHARE / (bound - lam (1 - 1/p)), so no output can take more than half the capital.

A gold N/A enters as the bound itself (y = bound: the test is of the pass rate among outputs the criterion
applies to, as in the audit), a gold Can't tell as the value that helps the test least (PASS for the drop
test, FAIL for the rise test).

**The bets** come from a recent window: exponentially discounted sums with a half-life of `half_life` audit
labels (half_life / p outputs). The rate's estimate there is the PPI++ estimate lam mean(f) + mean_labels(y -
lam f), shrunk towards the bound with PRIOR_WEIGHT pseudo-labels, and the bet is Kelly's for the drift
side (bound - estimate) less MARGIN standard errors: 0 while the window says the rate is on the null's side, so
a long quiet period costs little capital; it grows within about a half-life of a drop. Bets only have to be
predictable (chosen before the observation), so any window is valid.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, fields, replace
from typing import Any

import numpy as np

from calibration.stats.watch.evidence import (
    BET_SHARE,
    Bools,
    Evidence,
    Floats,
    apply_factor,
    begin_restarts,
    kelly_bet,
    log_factor,
    new_evidence,
)

# The bets' estimates start at the bound (no bet) and the residual variance at 1/4, each worth this many labels,
# so the first labels cannot make a bet large.
PRIOR_WEIGHT = 4.0

# A restart begins after every this many steps (audit labels for the pass rate, gold items of the class for TPR
# and TNR). Shorter means a drop after a long quiet period is met sooner by a fresh process, but with a later
# restart's smaller weight (evidence.py: log(2 k (k + 1)) more log-capital). On bench/watch.py's -0.10 drop after
# 2,000 labels (judge TPR 0.90 TNR 0.80, 200 streams, before MARGIN) 100 and 400 gave about the same median
# (264 and 253 labels).
RESTART_EVERY = 200

# The bets' window, in steps (audit labels; gold items). Shorter reacts sooner after a drop and bets more
# often on noise while the rate is above the bound. Same bench (before MARGIN): 25 gave a median of 298-348
# labels for the -0.10 drop, 50 gave 253-264, 100 gave 252-253, but 100 was slower for the TNR (2,160 against 1,800
# labels for a -0.10 move).
HALF_LIFE = 50.0

# The bets' drift is the window's gap to the bound less this many standard errors of the window's estimate, so
# noise alone (a window that dips just below the bound while the rate sits above it) bets little: the capital
# lost in a quiet period is what a later drop must win back first. bench/watch.py's -0.10 drop, judge TPR 0.90
# TNR 0.80, 400 streams (median audit labels to the alarm after a change at label 2,000 / 10,000; -0.05 at
# 2,000, with the share detected within 3,000 labels): 0 gave 264 / 503, 0.25 gave 255 / 421 / 1,892 (66%), 0.5
# gave 257 / 337 / 1,958 (66%), 0.75 gave 289 / 316 / 2,465 (57%), 1 gave 328 / 340.
MARGIN = 0.5

_BIG = 1e6  # a cap that never binds: the factor cannot go below 1 on that side


def _cap(room: Floats) -> Floats:
    with np.errstate(divide="ignore"):
        return np.where(room > 1e-12, BET_SHARE / np.maximum(room, 1e-12), _BIG)


@dataclass(frozen=True)
class PassTrack:
    """S copies of a pass-rate test; every field has shape (S,). The window's sums are discounted."""

    bound: Floats
    side: Floats
    evidence: Evidence
    out_n: Floats  # outputs in the window
    out_f: Floats  # the judge's PASS verdicts among them (f summed)
    lab_n: Floats  # audit labels (gold PASS/FAIL with a verdict) in the window
    lab_y: Floats
    lab_f: Floats
    lab_yf: Floats

    def to_json(self) -> dict[str, Any]:
        data: dict[str, Any] = {
            f.name: [float(x) for x in getattr(self, f.name)] for f in fields(self) if f.name != "evidence"
        }
        data["evidence"] = self.evidence.to_json()
        return data

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> PassTrack:
        values: dict[str, Any] = {
            f.name: np.asarray(data[f.name], dtype=float) for f in fields(cls) if f.name != "evidence"
        }
        return cls(evidence=Evidence.from_json(data["evidence"]), **values)


def new_pass_track(bound: Floats, side: Floats) -> PassTrack:
    size = bound.size
    zeros = np.zeros(size)
    return PassTrack(
        bound=np.asarray(bound, dtype=float),
        side=np.asarray(side, dtype=float),
        evidence=new_evidence(size),
        out_n=zeros,
        out_f=zeros.copy(),
        lab_n=zeros.copy(),
        lab_y=zeros.copy(),
        lab_f=zeros.copy(),
        lab_yf=zeros.copy(),
    )


@dataclass(frozen=True)
class PassWindow:
    lam: Floats  # the judge's weight
    estimate: Floats  # the window's PPI++ estimate of the pass rate, shrunk towards the bound
    variance: Floats  # of one output's observation x
    std_error: Floats  # of the estimate (labels' part only: it dominates when p is small)


def pass_window(track: PassTrack, *, p: float) -> PassWindow:
    """The recent window's estimates, from which the next bets are made (module docstring)."""
    w = PRIOR_WEIGHT
    lam = np.clip(track.lab_yf / (track.lab_f + w), 0.0, 1.0)
    with np.errstate(divide="ignore", invalid="ignore"):
        judged = np.where(track.out_n > 0, track.out_f / np.maximum(track.out_n, 1e-12), 0.0)
        raw = np.where(
            track.lab_n > 0, lam * judged + (track.lab_y - lam * track.lab_f) / np.maximum(track.lab_n, 1e-12), 0.0
        )
    estimate = np.clip((track.lab_n * raw + w * track.bound) / (track.lab_n + w), 0.0, 1.0)
    # (y - lam f)^2 summed: y^2 = y and f^2 = f for 0/1 values.
    residual = track.lab_y - 2 * lam * track.lab_yf + lam**2 * track.lab_f
    second = (np.maximum(residual, 0.0) + w * 0.25) / (track.lab_n + w)
    variance = estimate * (1 - estimate) + (1 - p) / p * second
    return PassWindow(lam=lam, estimate=estimate, variance=variance, std_error=np.sqrt(second / (track.lab_n + w)))


def pass_bets(track: PassTrack, window: PassWindow, *, p: float) -> Floats:
    room = np.where(track.side > 0, 1.0 / p - track.bound, track.bound - window.lam * (1.0 - 1.0 / p))
    drift = track.side * (track.bound - window.estimate) - MARGIN * window.std_error
    return kelly_bet(drift=drift, variance=window.variance, cap=_cap(room))


def pass_step(
    track: PassTrack,
    *,
    p: float,
    passes: Floats,
    fails: Floats,
    unjudged: Floats,
    audited: Floats,
    verdict: Floats,
    gold: Floats,
    half_life: float = HALF_LIFE,
    restart_every: int = RESTART_EVERY,
) -> PassTrack:
    """One step: a batch of outputs that did not go to the audit (counts of the judge's PASS and FAIL verdicts
    and of outputs without one), then, where `audited` is 1, one audited output with its verdict (1, 0 or NaN
    for none) and gold (1, 0, -1 for N/A, NaN for Can't tell). Where `audited` is 0, verdict and gold are
    ignored. The bets are made before the step, from the window so far."""
    window = pass_window(track, p=p)
    beta = pass_bets(track, window, p=p)
    lam, bound, side = window.lam, track.bound, track.side
    ev = track.evidence
    labeled = audited > 0
    due = labeled & (ev.steps > 0) & (np.mod(ev.steps, restart_every) == 0)
    ev = begin_restarts(ev, due)
    batch = (
        passes * log_factor(beta, side, bound, lam)
        + fails * log_factor(beta, side, bound, 0.0)
        + unjudged * log_factor(beta, side, bound, lam * bound)
    )
    f = np.where(np.isnan(verdict), bound, verdict)
    y = np.where(gold == -1.0, bound, np.where(np.isnan(gold), np.where(side > 0, 1.0, 0.0), gold))
    x = lam * f + (y - lam * f) / p
    label = np.where(labeled, log_factor(beta, side, bound, np.where(labeled, x, bound)), 0.0)
    outputs = passes + fails + unjudged + audited
    ev = apply_factor(ev, batch + label, steps=audited, clock=outputs)
    decay = 0.5 ** (outputs * p / half_life)
    usable = labeled & ~np.isnan(verdict) & ((gold == 0) | (gold == 1))
    y_in = np.where(usable, gold, 0.0)
    f_in = np.where(usable, verdict, 0.0)
    return replace(
        track,
        evidence=ev,
        out_n=track.out_n * decay + outputs,
        out_f=track.out_f * decay + passes + unjudged * bound + np.where(labeled, f, 0.0),
        lab_n=track.lab_n * decay + usable,
        lab_y=track.lab_y * decay + y_in,
        lab_f=track.lab_f * decay + f_in,
        lab_yf=track.lab_yf * decay + y_in * f_in,
    )


@dataclass(frozen=True)
class RateTrack:
    """S copies of a test of a rate on the audit stream (the judge's TPR or TNR); fields of shape (S,)."""

    bound: Floats
    side: Floats
    evidence: Evidence
    n: Floats  # items in the window (discounted)
    hits: Floats  # of which the judge agreed with the gold (discounted)

    def to_json(self) -> dict[str, Any]:
        return {
            "bound": [float(x) for x in self.bound],
            "side": [float(x) for x in self.side],
            "evidence": self.evidence.to_json(),
            "n": [float(x) for x in self.n],
            "hits": [float(x) for x in self.hits],
        }

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> RateTrack:
        arrays = {k: np.asarray(data[k], dtype=float) for k in ("bound", "side", "n", "hits")}
        return cls(evidence=Evidence.from_json(data["evidence"]), **arrays)


def _select(where: Bools, new: Any, old: Any) -> Any:
    """Field by field, new where `where` and old elsewhere, for a track or its evidence."""
    values = {}
    for f in fields(old):
        a, b = getattr(new, f.name), getattr(old, f.name)
        values[f.name] = _select(where, a, b) if isinstance(a, Evidence) else np.where(where, a, b)
    return type(old)(**values)


def new_rate_track(bound: Floats, side: Floats) -> RateTrack:
    zeros = np.zeros(bound.size)
    return RateTrack(
        bound=np.asarray(bound, dtype=float),
        side=np.asarray(side, dtype=float),
        evidence=new_evidence(bound.size),
        n=zeros,
        hits=zeros.copy(),
    )


def rate_estimate(track: RateTrack) -> Floats:
    """The window's rate, shrunk towards the bound with PRIOR_WEIGHT pseudo-items."""
    return (track.hits + PRIOR_WEIGHT * track.bound) / (track.n + PRIOR_WEIGHT)


def rate_step(
    track: RateTrack,
    *,
    hit: Floats,
    outputs: Floats | float = 0.0,
    active: Floats | None = None,
    half_life: float = HALF_LIFE,
    restart_every: int = RESTART_EVERY,
) -> RateTrack:
    """One gold item of the class: hit 1 where the judge agreed with the gold, 0 where not. `outputs` moves the
    clock (the outputs since the last item, for the alarm's "since when"). Where `active` is 0 the copy does not
    take the step (a simulated stream whose audited output was of the other class)."""
    if active is not None:
        moved = rate_step(track, hit=hit, outputs=outputs, half_life=half_life, restart_every=restart_every)
        selected: RateTrack = _select(active > 0, moved, track)
        return selected
    estimate = rate_estimate(track)
    variance = np.maximum(estimate * (1 - estimate), 1.0 / (4 * (track.n + PRIOR_WEIGHT)))
    room = np.where(track.side > 0, 1.0 - track.bound, track.bound)
    # No MARGIN here: the judge's rates are watched on one class of gold items only (a fifth of the labels for
    # the TNR in bench/watch.py), so a drop is slow to show and a margin costs more than the erosion it saves:
    # with it, the bench's TNR -0.10 was detected within 5,000 labels in 45% of streams instead of 65%.
    drift = track.side * (track.bound - estimate)
    beta = kelly_bet(drift=drift, variance=variance, cap=_cap(room))
    ev = track.evidence
    due = (ev.steps > 0) & (np.mod(ev.steps, restart_every) == 0)
    ev = begin_restarts(ev, due)
    ev = apply_factor(ev, log_factor(beta, track.side, track.bound, hit), steps=1.0, clock=outputs)
    decay = math.pow(0.5, 1.0 / half_life)
    return replace(track, evidence=ev, n=track.n * decay + 1.0, hits=track.hits * decay + hit)
