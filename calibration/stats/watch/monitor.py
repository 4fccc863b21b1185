"""One watch's state, updated observation by observation, and the alarms it raises.

A worker keeps a `WatchState` (JSON via to_json/from_json), feeds it the production outputs in arrival order
(`Outputs` for a batch that did not go to the audit, `AuditedOutput` for one that did, once its gold is
settled) and gets back the new state and any alarms. An audited output whose gold is pending holds back the
outputs after it: the order must not depend on the gold (an output labeled later because it is hard would
otherwise be counted out of turn).

Three tests, each at the lead's alpha over unlimited monitoring (evidence.py, tracks.py):
- the production pass rate against the release's minimum (PPI: every verdict, corrected by the audit's gold);
- the judge's TPR on gold PASS items against the calibration's lower bound;
- the judge's TNR on gold FAIL items against the calibration's lower bound.
Each fires at most once: a watch that has alarmed has spent its alpha on that test; a lead who acts on it and
wants to watch again starts a new watch.

Beside each test, a band over time for the plot and the alarm's "by how much". It must follow the current
rate, so it forgets: on a grid of values g, betting tests of "the rate stayed >= g" and "<= g" over a recent
segment, restarted every `restart_every` steps; the band shown is the segment begun one restart before the
last (so it rests on between 1 and 2 restart periods of data) at alpha_j / 2 per side, where segment j (begun
at restart j, j = 0 at the start) gets alpha_j = alpha / ((j + 1)(j + 2)), summing to alpha. So: if, over a
segment, the rate stayed >= g, the band's upper edge during that segment falls below g with probability at most
alpha_j / 2, and over all segments of unlimited monitoring at most alpha / 2 (the same for the lower edge). It
is wider than a band over all time would be, and widens slowly as j grows (sqrt(log((j + 1)(j + 2)))).
"""

from __future__ import annotations

import math
from dataclasses import dataclass, fields, replace
from typing import Any

import numpy as np

from calibration.stats.watch.evidence import Floats, log_capital, new_evidence
from calibration.stats.watch.tracks import (
    HALF_LIFE,
    RESTART_EVERY,
    PassTrack,
    RateTrack,
    new_pass_track,
    new_rate_track,
    pass_step,
    pass_window,
    rate_step,
)

NOT_APPLICABLE = -1.0  # a gold N/A, as in audit_stats
# The band's grid: 0.02 apart, 49 values each side.
BAND_GRID = np.round(np.arange(1, 50) * 0.02, 2)

PASS_RATE, TPR, TNR = "pass rate", "TPR", "TNR"
ADVICE = {
    PASS_RATE: "the agent's outputs pass less often than the release's minimum: look at what changed in the agent "
    "or its traffic since then, and gate the next version on fresh gold",
    TPR: "the judge fails good outputs it used to pass: recalibrate before the next gate",
    TNR: "the judge misses failures it used to catch: recalibrate before the next gate",
}


@dataclass(frozen=True)
class WatchSettings:
    minimum: float  # the release's minimum pass rate
    audit_share: float  # p: the probability that an output goes to the audit stream
    tpr_lower: float  # the calibration's lower bounds
    tnr_lower: float
    alpha: float = 0.05  # each test's false-alarm probability over unlimited monitoring
    half_life: float = HALF_LIFE
    restart_every: int = RESTART_EVERY

    def __post_init__(self) -> None:
        for name in ("minimum", "tpr_lower", "tnr_lower"):
            value = getattr(self, name)
            if not 0 <= value <= 1:
                raise ValueError(f"{name} must be between 0 and 1, got {value}")
        if not 0 < self.audit_share <= 1:
            raise ValueError(f"audit_share must be above 0 and at most 1, got {self.audit_share}")
        if not 0 < self.alpha < 1:
            raise ValueError(f"alpha must be between 0 and 1, got {self.alpha}")
        if self.half_life <= 0 or self.restart_every < 1:
            raise ValueError("half_life must be positive and restart_every at least 1")


@dataclass(frozen=True)
class Outputs:
    """Outputs that did not go to the audit, with the judge's verdicts counted (`unjudged`: no usable verdict)."""

    passes: int
    fails: int
    unjudged: int = 0


@dataclass(frozen=True)
class AuditedOutput:
    """An output the audit stream drew, with the judge's verdict (1, 0 or None) and its settled gold (1, 0,
    NOT_APPLICABLE, or None for Can't tell)."""

    verdict: float | None
    gold: float | None


@dataclass(frozen=True)
class Band:
    estimate: float | None  # the recent window's estimate (None before any usable label)
    lower: float
    upper: float


@dataclass(frozen=True)
class Alarm:
    what: str  # PASS_RATE, TPR or TNR
    bound: float  # the minimum, or the calibration's lower bound
    estimate: float | None  # the recent window's estimate at the alarm
    lower: float  # the band at the alarm
    upper: float
    at_labels: int  # audit labels (for TPR/TNR: gold items of the class) when it fired
    at_outputs: int
    since_labels: int  # the change is estimated to have begun after this many
    since_outputs: int
    evidence: float  # the test's capital (it fires at 1 / alpha)
    advice: str

    def message(self) -> str:
        # "since about audit label 1,171": the place in the stream the change is dated to, one label.
        unit = "audit label" if self.what == PASS_RATE else f"gold {'PASS' if self.what == TPR else 'FAIL'} item"
        now = "unknown" if self.estimate is None else f"about {self.estimate:.2f}"
        return (
            # Two windows, said as two: the estimate is the recent labels' (half-life HALF_LIFE), the band rests on
            # the last restart's segment (200 to 400 labels), so the estimate may lie outside the band.
            f"The {self.what} fell below {self.bound:.2f}: now {now} by the recent labels (band over a longer "
            f"stretch: {self.lower:.2f} to {self.upper:.2f}), "
            f"since about {unit} {self.since_labels:,} (output {self.since_outputs:,}); evidence {self.evidence:.0f} "
            f"against it staying at or above {self.bound:.2f}. What to do: {self.advice}."
        )


@dataclass(frozen=True)
class WatchState:
    settings: WatchSettings
    pass_rate: PassTrack  # one copy: the alarm's test at the minimum
    pass_band: PassTrack  # the grid, rise side then drop side
    tpr: RateTrack
    tpr_band: RateTrack
    tnr: RateTrack
    tnr_band: RateTrack
    outputs: int
    labels: int
    fired: tuple[str, ...]  # the tests that have alarmed

    def to_json(self) -> dict[str, Any]:
        return {
            "settings": self.settings.__dict__,
            "pass_rate": self.pass_rate.to_json(),
            "pass_band": self.pass_band.to_json(),
            "tpr": self.tpr.to_json(),
            "tpr_band": self.tpr_band.to_json(),
            "tnr": self.tnr.to_json(),
            "tnr_band": self.tnr_band.to_json(),
            "outputs": self.outputs,
            "labels": self.labels,
            "fired": list(self.fired),
        }

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> WatchState:
        return cls(
            settings=WatchSettings(**data["settings"]),
            pass_rate=PassTrack.from_json(data["pass_rate"]),
            pass_band=PassTrack.from_json(data["pass_band"]),
            tpr=RateTrack.from_json(data["tpr"]),
            tpr_band=RateTrack.from_json(data["tpr_band"]),
            tnr=RateTrack.from_json(data["tnr"]),
            tnr_band=RateTrack.from_json(data["tnr_band"]),
            outputs=int(data["outputs"]),
            labels=int(data["labels"]),
            fired=tuple(data["fired"]),
        )


def _grid_sides() -> tuple[Floats, Floats]:
    """The band's copies: [older segment: rise side, drop side | newer segment: rise side, drop side]."""
    g = BAND_GRID.size
    sides = np.concatenate([-np.ones(g), np.ones(g)])
    return np.tile(BAND_GRID, 4), np.tile(sides, 2)


def _roll(track: Any, steps: int, every: int, *, stepped: bool = True) -> Any:
    """At every `every` steps, the newer segment becomes the older one and a fresh one begins (only on the
    observation that made the step: `stepped`)."""
    if not stepped or steps == 0 or steps % every:
        return track
    half = track.bound.size // 2
    ev = track.evidence
    fresh = new_evidence(half)
    rolled = {f.name: np.concatenate([getattr(ev, f.name)[half:], getattr(fresh, f.name)]) for f in fields(ev)}
    return replace(track, evidence=type(ev)(**rolled))


def _segment_alpha(alpha: float, steps: int, every: int) -> float:
    """alpha_j of the older segment shown (module docstring): j = 0 until the first restart."""
    j = max(steps // every - 1, 0)
    return alpha / ((j + 1) * (j + 2))


def start_watch(settings: WatchSettings) -> WatchState:
    one = np.ones(1)
    grid, sides = _grid_sides()
    return WatchState(
        settings=settings,
        pass_rate=new_pass_track(np.array([settings.minimum]), one),
        pass_band=new_pass_track(grid, sides),
        tpr=new_rate_track(np.array([settings.tpr_lower]), one),
        tpr_band=new_rate_track(grid, sides),
        tnr=new_rate_track(np.array([settings.tnr_lower]), one),
        tnr_band=new_rate_track(grid, sides),
        outputs=0,
        labels=0,
        fired=(),
    )


def _check(observation: Outputs | AuditedOutput) -> None:
    if isinstance(observation, Outputs):
        counts = (observation.passes, observation.fails, observation.unjudged)
        # numpy's integers too (a worker may count with numpy); bools are not counts.
        if any(isinstance(c, bool) or not isinstance(c, (int, np.integer)) or c < 0 for c in counts):
            raise ValueError(f"outputs' counts must be non-negative integers, got {counts}")
        return
    if observation.verdict not in (None, 0, 1):
        raise ValueError(f"an audited output's verdict must be 1, 0 or None, got {observation.verdict!r}")
    if observation.gold not in (None, 0, 1, NOT_APPLICABLE):
        raise ValueError(f"an audited output's gold must be 1, 0, -1 (N/A) or None, got {observation.gold!r}")


def _pass_step(track: PassTrack, settings: WatchSettings, observation: Outputs | AuditedOutput) -> PassTrack:
    size = track.bound.size
    zeros = np.zeros(size)

    def full(value: float) -> Floats:
        return np.full(size, value)

    if isinstance(observation, Outputs):
        batch = (full(int(observation.passes)), full(int(observation.fails)), full(int(observation.unjudged)))
        audited, verdict, gold = zeros, full(math.nan), full(math.nan)
    else:
        batch = (zeros, zeros, zeros)
        v, g = observation.verdict, observation.gold
        audited = np.ones(size)
        verdict = full(math.nan if v is None else float(v))
        gold = full(math.nan if g is None else float(g))
    return pass_step(
        track,
        p=settings.audit_share,
        passes=batch[0],
        fails=batch[1],
        unjudged=batch[2],
        audited=audited,
        verdict=verdict,
        gold=gold,
        half_life=settings.half_life,
        restart_every=settings.restart_every,
    )


def _rate_step(track: RateTrack, settings: WatchSettings, hit: Floats, outputs: int) -> RateTrack:
    return rate_step(
        track, hit=hit, outputs=float(outputs), half_life=settings.half_life, restart_every=settings.restart_every
    )


def _band_edges(track: Any, alpha: float) -> tuple[float, float]:
    """The grid's values neither side of the older segment rejects at alpha/2 (_grid_sides)."""
    g = BAND_GRID.size
    threshold = math.log(2 / alpha)
    capital = track.evidence.log_s  # each segment is one betting process, begun at capital 1
    rise, drop = capital[:g] >= threshold, capital[g : 2 * g] >= threshold
    # The lower edge: the largest g with "<= g" rejected there and at every grid value below it.
    below = int(np.argmin(rise)) if not rise.all() else g
    lower = float(BAND_GRID[below - 1]) if below else 0.0
    above = int(np.argmin(drop[::-1])) if not drop.all() else g
    upper = float(BAND_GRID[g - above]) if above else 1.0
    return lower, max(upper, lower)


def pass_rate_band(state: WatchState) -> Band:
    track = state.pass_rate
    window = pass_window(track, p=state.settings.audit_share)
    estimate = None
    if track.lab_n[0] > 0:  # the window's PPI++ estimate without the shrink towards the bound
        judged = track.out_f[0] / track.out_n[0]
        lam = float(window.lam[0])
        raw = lam * judged + (track.lab_y[0] - lam * track.lab_f[0]) / track.lab_n[0]
        estimate = float(min(1.0, max(0.0, raw)))
    s = state.settings
    alpha = _segment_alpha(s.alpha, state.labels, s.restart_every)
    lower, upper = _band_edges(state.pass_band, alpha)
    return Band(estimate, lower, upper)


def rate_band(state: WatchState, what: str) -> Band:
    track, band = (state.tpr, state.tpr_band) if what == TPR else (state.tnr, state.tnr_band)
    estimate = float(track.hits[0] / track.n[0]) if track.n[0] > 0 else None
    s = state.settings
    alpha = _segment_alpha(s.alpha, int(track.evidence.steps[0]), s.restart_every)
    lower, upper = _band_edges(band, alpha)
    return Band(estimate, lower, upper)


def _alarm(state: WatchState, what: str) -> Alarm | None:
    track: PassTrack | RateTrack = state.pass_rate if what == PASS_RATE else state.tpr if what == TPR else state.tnr
    if what in state.fired:
        return None
    capital = float(log_capital(track.evidence)[0])
    if capital < math.log(1 / state.settings.alpha):
        return None
    band = pass_rate_band(state) if what == PASS_RATE else rate_band(state, what)
    ev = track.evidence
    return Alarm(
        what=what,
        bound=float(track.bound[0]),
        estimate=band.estimate,
        lower=band.lower,
        upper=band.upper,
        at_labels=int(ev.steps[0]),
        at_outputs=state.outputs,
        since_labels=int(ev.low_at[0]),
        since_outputs=int(ev.low_clock[0]),
        evidence=math.exp(min(capital, 700.0)),
        advice=ADVICE[what],
    )


def update(state: WatchState, observation: Outputs | AuditedOutput) -> tuple[WatchState, tuple[Alarm, ...]]:
    """The state after one observation, and the alarms it raised (each test fires once)."""
    _check(observation)
    s = state.settings
    labeled = int(isinstance(observation, AuditedOutput))
    outputs = (
        int(observation.passes + observation.fails + observation.unjudged) if isinstance(observation, Outputs) else 1
    )
    state = replace(
        state,
        pass_rate=_pass_step(state.pass_rate, s, observation),
        pass_band=_roll(
            _pass_step(state.pass_band, s, observation), state.labels + labeled, s.restart_every, stepped=labeled > 0
        ),
        outputs=state.outputs + outputs,
        labels=state.labels + labeled,
    )
    # The TPR and TNR tests' clocks are outputs, so their "since when" can be given in outputs too: each keeps
    # its own count, moved by every observation (a step of 0 items when the output is not of its class).
    tpr_clock = state.outputs - int(state.tpr.evidence.clock[0])
    tnr_clock = state.outputs - int(state.tnr.evidence.clock[0])
    if isinstance(observation, AuditedOutput) and observation.verdict is not None and observation.gold in (0, 1):
        hit = np.array([float(observation.verdict == observation.gold)])
        if observation.gold == 1:
            state = replace(
                state,
                tpr=_rate_step(state.tpr, s, hit, tpr_clock),
                tpr_band=_roll(
                    _rate_step(state.tpr_band, s, hit, 0), int(state.tpr.evidence.steps[0]) + 1, s.restart_every
                ),
            )
        else:
            state = replace(
                state,
                tnr=_rate_step(state.tnr, s, hit, tnr_clock),
                tnr_band=_roll(
                    _rate_step(state.tnr_band, s, hit, 0), int(state.tnr.evidence.steps[0]) + 1, s.restart_every
                ),
            )
    alarms = tuple(a for a in (_alarm(state, what) for what in (PASS_RATE, TPR, TNR)) if a is not None)
    if alarms:
        state = replace(state, fired=state.fired + tuple(a.what for a in alarms))
    return state, alarms


@dataclass(frozen=True)
class BandPoint:
    """The pass rate's band after an audit label, for the plot."""

    labels: int
    outputs: int
    estimate: float | None
    lower: float
    upper: float


def replay(
    settings: WatchSettings, observations: list[Outputs | AuditedOutput]
) -> tuple[WatchState, list[BandPoint], list[Alarm]]:
    """A watch fed `observations` from its start: the final state, the pass rate's band after each audit label
    (a worker that updates incrementally records the same point after each label), and the alarms."""
    state = start_watch(settings)
    points: list[BandPoint] = []
    alarms: list[Alarm] = []
    for observation in observations:
        state, raised = update(state, observation)
        alarms += raised
        if isinstance(observation, AuditedOutput):
            band = pass_rate_band(state)
            points.append(BandPoint(state.labels, state.outputs, band.estimate, band.lower, band.upper))
    return state, points, alarms
