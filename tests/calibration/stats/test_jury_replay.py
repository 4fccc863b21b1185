"""The jury's test replayed forwards (calibration/stats/jury_replay.py) against the label-by-label one
(audit_predictor.jury_log_capital and jury_decide_each_label): the same capitals (within 1e-9: one inverse a label
and a matrix product stand for the per-sequence solve and sums) and the same decisions at the same labels."""

from __future__ import annotations

import numpy as np

from calibration.stats.audit_predictor import jury_decide_each_label, jury_log_capital
from calibration.stats.audit_stats import MIN_GOLD, NOT_APPLICABLE
from calibration.stats.jury_replay import JuryBetting, JuryOrder, jury_decisions_forward


def _jury(seed: int, S: int, N: int, rate: float) -> tuple[np.ndarray, np.ndarray]:
    """S simulated orders' gold (1, 0, some N/A) and three signals that follow the first: a vote share over three
    samples, a verdict, and one signal that is constant on the first labels (a config that says PASS there)."""
    rng = np.random.default_rng(seed)
    drawn = (rng.random((S, N)) < rate).astype(np.int8)
    drawn[rng.random((S, N)) < 0.03] = int(NOT_APPLICABLE)
    truth = drawn[0] == 1
    share = np.mean([np.where(rng.random(N) < 0.75, truth, ~truth) for _ in range(3)], axis=0)
    verdict = np.where(rng.random(N) < 0.7, truth, ~truth).astype(float)
    late = np.where(np.arange(N) < 50, 1.0, verdict[::-1])
    return drawn, np.column_stack([share, verdict, late])


def test_the_capital_carried_block_by_block_is_the_label_by_label_capital():
    drawn, f = _jury(1, S=6, N=500, rate=0.6)
    y = np.where(drawn == NOT_APPLICABLE, 0.6, drawn).astype(float)
    reference = jury_log_capital(y=y, f=f, m=0.6)
    test = JuryBetting.fresh_for(3, 6)
    order = JuryOrder.of(f)
    # Uneven blocks, one of a single label: where the blocks fall changes nothing.
    parts = [test.advance(y[:, a:b], order, 0.6) for a, b in ((0, 1), (1, 2), (2, 97), (97, 300), (300, 500))]
    np.testing.assert_allclose(np.concatenate(parts, axis=1), reference, rtol=0, atol=1e-9)
    # Two identical signals (two configs that agree everywhere): the ridge keeps the inverse as good as the solve.
    twin = np.column_stack([f[:, 1], f[:, 1]])
    parts = [JuryBetting.fresh_for(2, 6).advance(y, JuryOrder.of(twin), 0.6)]
    np.testing.assert_allclose(parts[0], jury_log_capital(y=y, f=twin, m=0.6), rtol=0, atol=1e-9)
    # Negative control: a test that forgot one label's sums is off.
    skipped = JuryBetting.fresh_for(3, 6)
    skipped.advance(y[:, :1], order, 0.6)
    skipped.t = 2
    assert np.abs(skipped.advance(y[:, 2:], order, 0.6) - reference[:, 2:]).max() > 1e-3


def test_one_signal_is_the_one_bit_capital():
    drawn, f = _jury(2, S=4, N=300, rate=0.7)
    y = np.where(drawn == NOT_APPLICABLE, 0.7, drawn).astype(float)
    test = JuryBetting.fresh_for(1, 4)
    got = np.concatenate(
        [test.advance(y[:, :40], JuryOrder.of(f[:, 1:2]), 0.7), test.advance(y[:, 40:], JuryOrder.of(f[:, 1:2]), 0.7)],
        axis=1,
    )
    np.testing.assert_allclose(got, jury_log_capital(y=y, f=f[:, 1:2], m=0.7), rtol=0, atol=1e-12)


def test_labels_every_order_shares_run_once_and_decide_as_the_full_replay():
    drawn, f = _jury(4, S=40, N=1200, rate=0.62)
    drawn[:, :120] = drawn[0, :120]  # the plan's settled labels, the same in every simulation
    rule = {"confidence": 0.95, "min_gold": MIN_GOLD}
    for minimum in (0.62, 0.57, 0.68):
        reference = jury_decide_each_label(gold=drawn.astype(float), f=f, minimum=minimum, **rule)
        assert not np.any(reference.at[reference.at > 0] <= 120)  # as a plan's: the shared labels decide nothing
        assert len(set(reference.at)) > 10
        forward = jury_decisions_forward(drawn=drawn, f=f, shared=120, minimum=minimum, **rule)
        assert (list(forward[0]), list(forward[1])) == (list(reference.decided), list(reference.at))
