"""The stratified test's compiled inner loop (calibration/stats/strata_kernel.py) against the numpy expressions it
replaced in audit_strata.Running.advance: the same numbers to the bit, whatever the block's shape."""

from __future__ import annotations

import numpy as np
import pytest

from calibration.stats.strata_kernel import running_products, through_block


def _block(seed: int, B: int, S: int, E: int, G: int) -> tuple[np.ndarray, ...]:
    rng = np.random.default_rng(seed)
    beta = rng.random((B, S, E)) * 2
    cap = np.where(rng.random((B, S, G)) < 0.1, 1e6, rng.random((B, S, G)) * 2)  # some caps that never bind
    yc = rng.random((B, S, G)) - 0.7
    capital = rng.random((S, E, G)) * 3
    return beta, cap, yc, capital


def _numpy_factor(beta: np.ndarray, cap: np.ndarray, yc: np.ndarray) -> np.ndarray:
    factor = np.minimum(beta[:, :, :, None], cap[:, :, None, :])
    factor *= yc[:, :, None, :]
    factor += 1
    return factor


@pytest.mark.parametrize("shape", [(11, 50, 8, 59), (32, 1, 8, 59), (1, 3, 8, 400), (5, 2, 8, 2), (32, 7, 8, 61)])
def test_the_compiled_running_products_are_numpys_to_the_bit(shape: tuple[int, int, int, int]) -> None:
    beta, cap, yc, capital = _block(sum(shape), *shape)
    factor = _numpy_factor(beta, cap, yc)
    factor[0] *= capital
    for i in range(1, factor.shape[0]):
        factor[i] *= factor[i - 1]
    total, last = running_products(beta, cap, yc, capital)
    assert np.array_equal(total, factor.sum(axis=2))
    assert np.array_equal(last, factor[-1])
    through = through_block(beta, cap, yc, capital)
    assert np.array_equal(through, capital * np.multiply.reduce(_numpy_factor(beta, cap, yc), axis=0))
    # Negative controls: a fused multiply-add, or the edges summed pairwise, are off in the last bits.
    fused = np.minimum(beta[:, :, :, None], cap[:, :, None, :]).astype(np.longdouble) * yc[:, :, None, :] + 1
    assert not np.array_equal(fused.astype(float)[0] * capital, factor[0])
    r = [factor[:, :, e] for e in range(8)]
    pairwise = ((r[0] + r[1]) + (r[2] + r[3])) + ((r[4] + r[5]) + (r[6] + r[7]))
    assert not np.array_equal(pairwise, total)


def test_views_and_strided_blocks_give_the_same_numbers() -> None:
    beta, cap, yc, capital = _block(3, 12, 6, 8, 40)
    total, last = running_products(beta[::2], cap[::2], yc[::2], capital[:, :, ::-1])
    again, kept = running_products(
        *(np.ascontiguousarray(a) for a in (beta[::2], cap[::2], yc[::2], capital[:, :, ::-1]))
    )
    assert np.array_equal(total, again) and np.array_equal(last, kept)
