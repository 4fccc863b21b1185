"""The uniform audit's rule replayed forwards (calibration/stats/audit_replay.py) against the label-by-label one it
replaces (audit_stats.betting_log_capital and decide_each_label): the same capitals to the bit, the same
decisions at the same labels, and a forecast equal to the one that replays every order from its first label."""

from __future__ import annotations

import numpy as np

from calibration.stats.audit_forecast import audit_forecast
from calibration.stats.audit_replay import Betting, Order, first_decisions_forward
from calibration.stats.audit_stats import MIN_GOLD, NOT_APPLICABLE, betting_log_capital, decide_each_label


def _orders(seed: int, S: int, N: int, rate: float) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    drawn = (rng.random((S, N)) < rate).astype(np.int8)
    drawn[rng.random((S, N)) < 0.03] = int(NOT_APPLICABLE)
    # A judge that agrees with the first order 80% of the time, some outputs without a verdict (its pass rate).
    f = np.where(rng.random(N) < 0.8, drawn[0] == 1, drawn[0] != 1).astype(float)
    f[rng.random(N) < 0.05] = f.mean()
    return drawn, f


def test_the_capital_carried_block_by_block_is_the_label_by_label_capital_to_the_bit():
    drawn, f = _orders(1, S=7, N=600, rate=0.6)
    y = np.where(drawn == NOT_APPLICABLE, 0.6, drawn).astype(float)
    reference = betting_log_capital(y=y, f=f, m=0.6)
    test = Betting.fresh(7)
    order = Order.of(f)
    # Uneven blocks, one of a single label: where the blocks fall changes nothing.
    parts = [test.advance(y[:, a:b], order, 0.6) for a, b in ((0, 1), (1, 2), (2, 97), (97, 400), (400, 600))]
    assert np.array_equal(np.concatenate(parts, axis=1), reference)
    # Negative control: a test that forgot one label's sums is off.
    skipped = Betting.fresh(7)
    skipped.advance(y[:, :1], order, 0.6)
    skipped.t = 2
    assert not np.array_equal(skipped.advance(y[:, 2:600], order, 0.6), reference[:, 2:])


def test_labels_every_order_shares_run_once_and_decide_as_the_full_replay():
    drawn, f = _orders(4, S=40, N=1200, rate=0.62)
    drawn[:, :150] = drawn[0, :150]  # the plan's settled labels, the same in every simulation
    for minimum in (0.62, 0.58, 0.67):
        reference = decide_each_label(
            gold=drawn.astype(float), f=f, minimum=minimum, confidence=0.95, min_gold=MIN_GOLD
        )
        assert not np.any(reference.at[reference.at > 0] <= 150)  # as a plan's: the shared labels decide nothing
        assert len(set(reference.at)) > 10
        decided, at = first_decisions_forward(
            drawn=drawn, f=f, shared=150, minimum=minimum, confidence=0.95, min_gold=MIN_GOLD
        )
        assert list(decided) == list(reference.decided)
        assert list(at) == list(reference.at)


def _reference_forecast(**kw: object) -> tuple[float, ...]:
    """The forecast as it was: every order replayed from its first label with decide_each_label."""
    import calibration.stats.audit_forecast as module

    def replay(*, drawn, f, shared, minimum, confidence, min_gold):  # type: ignore[no-untyped-def]
        d = decide_each_label(gold=drawn.astype(float), f=f, minimum=minimum, confidence=confidence, min_gold=min_gold)
        return d.decided, d.at

    saved = module.first_decisions_forward
    module.first_decisions_forward = replay  # type: ignore[assignment]
    try:
        forecast = audit_forecast(**kw)  # type: ignore[arg-type]
    finally:
        module.first_decisions_forward = saved
    return (forecast.p_decided, forecast.p_pass, forecast.p_fail, forecast.expected_labels, forecast.p90_labels)


def test_the_forecast_equals_the_one_that_replays_every_order_from_its_first_label():
    rng = np.random.default_rng(5)
    N = 2500
    truth = (rng.random(N) < 0.62).astype(float)
    judge = np.where(rng.random(N) < 0.8, truth, 1 - truth)
    for n, minimum, pending, na in ((300, 0.62, 0.0, 0.0), (300, 0.6, 0.05, 0.03), (60, 0.55, 0.1, 0.0)):
        gold: list[float | None] = [-1.0 if rng.random() < na else float(v) for v in truth[:n]]
        gold = [None if rng.random() < pending else v for v in gold]
        verdicts = [None if rng.random() < 0.03 else float(v) for v in judge]
        kw = dict(gold=gold, verdicts=verdicts, minimum=minimum, k=25, n_sims=80, seed=3)
        forecast = audit_forecast(**kw)  # type: ignore[arg-type]
        now = (forecast.p_decided, forecast.p_pass, forecast.p_fail, forecast.expected_labels, forecast.p90_labels)
        assert now == _reference_forecast(**kw)
        assert forecast.expected_labels > 25  # undecided for a while: the replay ran many blocks
