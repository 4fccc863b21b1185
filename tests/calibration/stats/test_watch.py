"""The watch's statistics (calibration/stats/watch/): pure, no database.

Hand-worked values of the betting processes and their restarts, the bets' caps at their worst observation,
validity by simulation with known truth over 20,000 audit labels (at the bounds, and with a pass rate that moves
while never going below the minimum), a negative control (a fixed-sample Wilson bound peeked at after every
label alarms falsely far more often than alpha on the same streams), detection of changes, and the watch's
incremental state: its JSON, its alarms, its bad input.
"""

from __future__ import annotations

import json
import math

import numpy as np
import pytest

from calibration.stats.watch import (
    NOT_APPLICABLE,
    PASS_RATE,
    TNR,
    TPR,
    AuditedOutput,
    Outputs,
    WatchSettings,
    WatchState,
    pass_rate_band,
    rate_band,
    replay,
    start_watch,
    update,
)
from calibration.stats.watch.evidence import (
    FIRST_WEIGHT,
    apply_factor,
    log_capital,
    new_evidence,
    restart_weight,
    unstarted_weight,
)
from calibration.stats.watch.simulation import Streams, run_streams, wilson_peeked
from calibration.stats.watch.tracks import (
    PassTrack,
    new_pass_track,
    new_rate_track,
    pass_bets,
    pass_step,
    pass_window,
    rate_step,
)

ALPHA = 0.05


def constant(value: float):
    return lambda t: value


def capital(track) -> float:
    return float(np.exp(log_capital(track.evidence))[0])


# --- hand-worked values -------------------------------------------------------------------------------------


def test_the_restart_weights_sum_to_one_over_unlimited_time():
    k = np.arange(1, 200_001, dtype=float)
    assert FIRST_WEIGHT + restart_weight(k).sum() + unstarted_weight(np.array([200_000.0]))[0] == pytest.approx(1.0)
    # Before any restart, the capital is the first process's weight times its capital plus the cash of the rest.
    ev = apply_factor(new_evidence(1), np.log(np.array([3.0])), steps=1.0, clock=1.0)
    assert math.exp(log_capital(ev)[0]) == pytest.approx(0.5 * 3 + 0.5)


# A rate test's bets, by hand: bound 0.8, gold items the judge got wrong (x = 0), no decay worth the name
# (half-life 1e12 items). Item 1: the window is empty, the estimate is the bound: no bet, capital 1.
# Item 2: estimate (0 + 4 * 0.8) / (1 + 4) = 0.64, variance 0.64 * 0.36 = 0.2304, drift 0.16,
#   bet 0.16 / (0.2304 + 0.0256) = 0.625 (cap 0.5 / 0.2 = 2.5), factor 1 + 0.625 * 0.8 = 1.5.
# Item 3: estimate 3.2 / 6 = 0.5333, variance 0.24889, drift 0.26667, bet 0.26667 / (0.24889 + 0.07111) =
#   0.83333, factor 1 + 0.83333 * 0.8 = 1.66667 (= 5/3).


def test_a_rate_tests_capital_by_hand():
    # The first process (weight 1/2) holds 1.5 * 5/3 = 2.5; the restarts not begun hold 1/2 in cash.
    track = new_rate_track(np.array([0.8]), np.array([1.0]))
    seen = []
    for _ in range(3):
        track = rate_step(track, hit=np.array([0.0]), half_life=1e12)
        seen.append(capital(track))
    assert seen == pytest.approx([1.0, 0.5 * 1.5 + 0.5, 0.5 * 2.5 + 0.5], abs=1e-9)


def test_a_restart_joins_with_its_weight_and_takes_only_later_factors():
    # As above with a restart after every 2 items: before item 3 the first restart joins with weight
    # (1 - 1/2) / (1 * 2) = 1/4 at capital 1, and the cash of the restarts not begun falls to 1/2 / 2 = 1/4.
    # After item 3: 0.5 * 1.5 * 5/3 + 0.25 * 5/3 + 0.25.
    track = new_rate_track(np.array([0.8]), np.array([1.0]))
    for _ in range(3):
        track = rate_step(track, hit=np.array([0.0]), half_life=1e12, restart_every=2)
    assert capital(track) == pytest.approx(1.25 + 0.25 * (5 / 3) + 0.25, abs=1e-9)
    assert track.evidence.starts[0] == 1


def test_the_pass_rates_capital_by_hand():
    # p = 0.5, minimum 0.7, no decay. Step 1: one audited output, judged FAIL, gold FAIL; the window is empty,
    # so no bet. Step 2's bet, from the window (1 output, f = 0; 1 label, y = 0): lam = 0 / (0 + 4) = 0,
    # estimate (1 * 0 + 4 * 0.7) / 5 = 0.56, E[(y - lam f)^2] = (0 + 4 / 4) / 5 = 0.2, variance
    # 0.56 * 0.44 + (0.5 / 0.5) * 0.2 = 0.4464, standard error sqrt(0.2 / 5) = 0.2, drift 0.14 - 0.1 = 0.04,
    # bet 0.04 / 0.448 = 5/56 (cap 0.5 / (2 - 0.7) = 0.385).
    # Step 2: a PASS and a FAIL verdict not audited (x = lam f = 0: factor 1 + 5/56 * 0.7 = 1.0625 each), then
    # an audited output judged PASS with gold PASS: x = 0 + (1 - 0) / 0.5 = 2, factor 1 - 5/56 * 1.3.
    track = new_pass_track(np.array([0.7]), np.array([1.0]))
    one, zero = np.array([1.0]), np.array([0.0])
    common = {"p": 0.5, "unjudged": zero, "audited": one, "half_life": 1e12}
    track = pass_step(track, passes=zero, fails=zero, verdict=zero, gold=zero, **common)
    assert capital(track) == pytest.approx(1.0)
    window = pass_window(track, p=0.5)
    assert (window.lam[0], window.estimate[0], window.variance[0], window.std_error[0]) == pytest.approx(
        (0.0, 0.56, 0.4464, 0.2)
    )
    assert pass_bets(track, window, p=0.5)[0] == pytest.approx(5 / 56)
    track = pass_step(track, passes=one, fails=one, verdict=one, gold=one, **common)
    product = 1.0625**2 * (1 - 5 / 56 * 1.3)
    assert capital(track) == pytest.approx(0.5 * product + 0.5)
    assert (track.evidence.steps[0], track.evidence.clock[0]) == (2, 4)


@pytest.mark.parametrize("p", [0.01, 0.2])
@pytest.mark.parametrize("side", [1.0, -1.0])
def test_no_output_takes_more_than_half_the_capital(p, side):
    # A window far from the bound makes the bet hit its cap; then the worst observation for the side: a gold
    # PASS the judge failed (x = 1/p) for the drop test, a gold FAIL the judge passed (x = lam (1 - 1/p)) for
    # the rise test.
    bound = 0.8 if side > 0 else 0.2
    rate = 0.0 if side > 0 else 1.0
    track = PassTrack(
        bound=np.array([bound]),
        side=np.array([side]),
        evidence=new_evidence(1),
        out_n=np.array([1e6]),
        out_f=np.array([rate * 1e6]),
        lab_n=np.array([1e4]),
        lab_y=np.array([rate * 1e4]),
        lab_f=np.array([rate * 1e4]),
        lab_yf=np.array([rate * 1e4]),
    )
    window = pass_window(track, p=p)
    lam = window.lam[0]
    beta = pass_bets(track, window, p=p)[0]
    worst = 1 / p if side > 0 else lam * (1 - 1 / p)
    assert beta > 0
    assert 1 + beta * side * (bound - worst) == pytest.approx(0.5)
    verdict, gold = (0.0, 1.0) if side > 0 else (1.0, 0.0)
    zero = np.array([0.0])
    after = pass_step(
        track,
        p=p,
        passes=zero,
        fails=zero,
        unjudged=zero,
        audited=np.array([1.0]),
        verdict=np.array([verdict]),
        gold=np.array([gold]),
    )
    assert math.exp(after.evidence.log_s[0]) == pytest.approx(0.5)


# --- validity by simulation ---------------------------------------------------------------------------------


NULLS = {
    # The hardest null: every rate exactly at its bound, for 20,000 audit labels.
    "at the bounds": Streams(pass_rate=constant(0.80), tpr=constant(0.85), tnr=constant(0.75), p=0.01),
    # A pass rate that moves (between the minimum and 0.05 above it, period 3,000 labels) and never goes below.
    "moving, never below": Streams(
        pass_rate=lambda t: 0.80 + 0.05 * (1 + math.sin(2 * math.pi * t / 3_000)) / 2,
        tpr=lambda t: 0.85 + 0.1 * (t // 5_000 % 2),
        tnr=constant(0.80),
        p=0.01,
    ),
}


@pytest.mark.slow
@pytest.mark.parametrize("name", NULLS)
def test_false_alarms_stay_below_alpha_over_20000_labels(name):
    # 400 streams: a rate of 5% would show as 20 +- 4.4; the check allows 5% plus two standard errors (7.2%),
    # and the negative control below shows the same streams can see an invalid rule.
    streams = NULLS[name]
    size = 400
    first = run_streams(
        streams, size=size, labels=20_000, minimum=0.80, tpr_lower=0.85, tnr_lower=0.75, alpha=ALPHA, seed=11
    )
    limit = ALPHA + 2 * math.sqrt(ALPHA * (1 - ALPHA) / size)
    for what, label in (("pass rate", first.pass_label), ("TPR", first.tpr_label), ("TNR", first.tnr_label)):
        assert (label > 0).mean() <= limit, what
    # Negative control: a fixed-sample bound, peeked at after every label, alarms falsely far more often.
    assert wilson_peeked(streams.pass_rate, size=size, labels=20_000, minimum=0.80, seed=11) > 3 * ALPHA


def test_a_fixed_sample_bound_peeked_at_every_label_alarms_falsely_more_than_alpha():
    # Quick form of the negative control (the slow test above runs it on 20,000 labels): already over 2,000
    # labels at the minimum, peeking alarms in far more than 5% of streams.
    assert wilson_peeked(constant(0.80), size=400, labels=2_000, minimum=0.80, seed=3) > 2 * ALPHA


def test_the_watch_is_quiet_when_nothing_moves():
    first = run_streams(
        Streams(pass_rate=constant(0.85), tpr=constant(0.90), tnr=constant(0.80), p=0.01),
        size=100,
        labels=2_000,
        minimum=0.80,
        tpr_lower=0.85,
        tnr_lower=0.75,
        alpha=ALPHA,
        seed=5,
    )
    assert (first.pass_label > 0).sum() + (first.tpr_label > 0).sum() + (first.tnr_label > 0).sum() <= 3


# --- detection -------------------------------------------------------------------------------------------


def test_it_detects_a_drop_in_the_pass_rate_and_dates_it():
    change = 500
    first = run_streams(
        Streams(pass_rate=lambda t: 0.85 if t < change else 0.65, tpr=constant(0.95), tnr=constant(0.90), p=0.01),
        size=60,
        labels=change + 1_000,
        minimum=0.80,
        tpr_lower=0.90,
        tnr_lower=0.85,
        alpha=ALPHA,
        seed=2,
    )
    assert (first.pass_label > change).all()
    delays = first.pass_label - change
    assert np.median(delays) < 200
    assert abs(np.median(first.pass_since) - change) < 60
    # Outputs after the change: about 1 / p per label.
    after = first.pass_output - first.outputs_at[np.arange(60), change]
    assert np.median(after / delays) == pytest.approx(100, rel=0.2)


def test_it_detects_a_judge_that_stops_catching_failures():
    change = 500
    first = run_streams(
        Streams(pass_rate=constant(0.5), tpr=constant(0.90), tnr=lambda t: 0.90 if t < change else 0.60, p=0.05),
        size=60,
        labels=change + 1_000,
        minimum=0.40,
        tpr_lower=0.85,
        tnr_lower=0.85,
        alpha=ALPHA,
        seed=4,
    )
    assert (first.tnr_label > change).all()
    assert (first.tpr_label < 0).mean() > 0.9  # the TPR did not move
    assert (first.pass_label < 0).mean() > 0.9  # nor did the pass rate


# --- the watch's state ----------------------------------------------------------------------------------------


def settings() -> WatchSettings:
    return WatchSettings(minimum=0.8, audit_share=0.05, tpr_lower=0.85, tnr_lower=0.85, alpha=ALPHA)


def feed(state: WatchState, rng: np.random.Generator, *, theta: float, tnr: float, labels: int):
    alarms = []
    for _ in range(labels):
        gap = int(rng.geometric(0.05) - 1)
        judged = int(rng.binomial(gap, theta * 0.95 + (1 - theta) * (1 - tnr)))
        state, raised = update(state, Outputs(passes=judged, fails=gap - judged))
        alarms += raised
        gold = int(rng.random() < theta)
        verdict = int(rng.random() < 0.95) if gold else int(rng.random() >= tnr)
        state, raised = update(state, AuditedOutput(verdict=verdict, gold=gold))
        alarms += raised
    return state, alarms


def test_a_judge_that_misses_failures_raises_one_tnr_alarm_that_says_what_to_do():
    rng = np.random.default_rng(8)
    state, alarms = feed(start_watch(settings()), rng, theta=0.9, tnr=0.95, labels=300)
    assert alarms == []
    state, alarms = feed(state, rng, theta=0.9, tnr=0.40, labels=1_500)
    assert [a.what for a in alarms] == [TNR]
    alarm = alarms[0]
    assert alarm.evidence >= 1 / ALPHA
    assert alarm.estimate is not None and alarm.estimate < 0.85
    assert alarm.lower <= alarm.upper
    assert 300 * 0.1 * 0.5 < alarm.since_labels <= alarm.at_labels  # gold FAIL items, about 10% of labels
    assert 0 < alarm.since_outputs < alarm.at_outputs <= state.outputs
    assert "recalibrate before the next gate" in alarm.message()
    assert "misses failures" in alarm.advice
    # It fired once: the test has spent its alpha.
    assert state.fired == (TNR,)
    _state, later = feed(state, rng, theta=0.9, tnr=0.40, labels=300)
    assert [a.what for a in later] == []


def test_the_state_round_trips_through_json_and_goes_on_identically():
    rng = np.random.default_rng(1)
    state, _ = feed(start_watch(settings()), rng, theta=0.85, tnr=0.9, labels=120)
    copy = WatchState.from_json(json.loads(json.dumps(state.to_json())))
    a, _ = feed(state, np.random.default_rng(2), theta=0.7, tnr=0.9, labels=50)
    b, _ = feed(copy, np.random.default_rng(2), theta=0.7, tnr=0.9, labels=50)
    assert a.to_json() == b.to_json()


def test_the_band_follows_the_rate():
    rng = np.random.default_rng(6)
    state, _ = feed(start_watch(settings()), rng, theta=0.9, tnr=0.9, labels=600)
    band = pass_rate_band(state)
    assert band.lower <= 0.9 <= band.upper and band.upper - band.lower < 0.3
    assert band.estimate == pytest.approx(0.9, abs=0.06)
    state, alarms = feed(state, rng, theta=0.6, tnr=0.9, labels=600)
    assert PASS_RATE in [a.what for a in alarms]
    band = pass_rate_band(state)
    assert band.lower <= 0.6 <= band.upper < 0.8
    tpr = rate_band(state, TPR)
    assert tpr.lower <= 0.95 <= tpr.upper


def test_a_replay_gives_the_band_after_every_label_as_the_incremental_watch_does():
    observations = [
        Outputs(passes=18, fails=1),
        AuditedOutput(verdict=1, gold=1),
        Outputs(passes=20, fails=0, unjudged=2),
        AuditedOutput(verdict=0, gold=0),
        AuditedOutput(verdict=None, gold=1),
    ]
    state, points, alarms = replay(settings(), observations)
    assert [(p.labels, p.outputs) for p in points] == [(1, 20), (2, 43), (3, 44)]
    assert alarms == []
    step = start_watch(settings())
    for observation in observations:
        step, _ = update(step, observation)
    assert step.to_json() == state.to_json()
    last = pass_rate_band(step)
    assert (points[-1].estimate, points[-1].lower, points[-1].upper) == (last.estimate, last.lower, last.upper)


def test_numpy_counts_are_counts():
    state, _ = update(start_watch(settings()), Outputs(passes=np.int64(3), fails=np.int64(1)))  # type: ignore[arg-type]
    assert state.outputs == 4


def test_gold_not_applicable_and_cant_tell_move_no_judge_rate():
    state = start_watch(settings())
    for gold in (NOT_APPLICABLE, None):
        state, alarms = update(state, AuditedOutput(verdict=1, gold=gold))
        assert alarms == ()
    assert (state.labels, state.tpr.evidence.steps[0], state.tnr.evidence.steps[0]) == (2, 0, 0)


@pytest.mark.parametrize(
    ("observation", "message"),
    [
        (Outputs(passes=-1, fails=0), "non-negative integers"),
        (Outputs(passes=1.5, fails=0), "non-negative integers"),  # type: ignore[arg-type]
        (Outputs(passes=True, fails=0), "non-negative integers"),
        (AuditedOutput(verdict=2, gold=1), "verdict must be 1, 0 or None"),
        (AuditedOutput(verdict=1, gold=0.5), "gold must be 1, 0, -1 (N/A) or None"),
    ],
)
def test_bad_observations_get_a_clear_error_and_change_nothing(observation, message):
    state = start_watch(settings())
    before = json.dumps(state.to_json())
    with pytest.raises(ValueError, match=message.replace("(", r"\(").replace(")", r"\)")):
        update(state, observation)
    assert json.dumps(state.to_json()) == before


@pytest.mark.parametrize(
    ("changes", "message"),
    [
        ({"minimum": 1.2}, "minimum must be between 0 and 1"),
        ({"audit_share": 0.0}, "audit_share must be above 0"),
        ({"alpha": 1.0}, "alpha must be between 0 and 1"),
        ({"tnr_lower": -0.1}, "tnr_lower must be between 0 and 1"),
    ],
)
def test_bad_settings_get_a_clear_error(changes, message):
    values = {"minimum": 0.8, "audit_share": 0.01, "tpr_lower": 0.85, "tnr_lower": 0.75, **changes}
    with pytest.raises(ValueError, match=message):
        WatchSettings(**values)
