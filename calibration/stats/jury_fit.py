"""The jury's correlation with gold on a calibration, estimated out of sample: what the price of gating reads for a
jury (issue 38). Pure numpy (and scikit-learn's fold split), no Django.

A uniform audit with extra judge configs bets on gold minus the least-squares combination of the signals (its own
judge's vote share and each extra config's), so it pays (1 - R^2) of plain sampling's variance, R the combination's
correlation with gold (calibration/stats/audit_predictor.py). The price model reads that R where it reads one
judge's phi. On a calibration of a few dozen items, the in-sample R of a fit with an intercept and K slopes is
optimistic: the fit also explains noise (with K + 1 items it explains everything), and every extra config would
look like a saving. So the R priced here is the correlation with gold of cross-validated predictions: each item
predicted by the slopes fitted without it (10 folds; leave-one-out on 10 items or fewer).

Why cross-validation and not the adjusted R^2: the adjusted R^2 corrects the mean of R^2 under a linear model with
Gaussian noise, which 0/1 gold on a few items is not; cross-validated predictions need no model, only that the
items are exchangeable, and they are what the audit does (its slopes are fitted on labels other than the one it bets
on). They are a little pessimistic (each fold's slopes are fitted on 90% of the items), which errs towards pricing
more labels, the side a lead can afford. A jury that predicts worse than the mean gets R 0 (no saving), not a
negative R, whose square would read as one.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike
from sklearn.model_selection import KFold

# The folds of the cross-validation; with fewer items, one fold per item (leave-one-out).
FOLDS = 10
# The fold split's seed: the items' order is the calibration's (output ids), so the folds are shuffled, the same
# way every time (a report must read the same figure twice).
SEED = 0
# Below this many items, no jury figure: a handful of items cannot tell K slopes from noise.
MIN_ITEMS = 10
# A signal whose variance over the items is below this is constant there: it can predict nothing, so it is left out
# of the fit (and of the jury's names).
CONSTANT = 1e-12


@dataclass(frozen=True)
class JuryFit:
    """A jury measured on a calibration: the other judge configs beside the judge, in the jury's order, and its
    cross-validated R with gold over n items."""

    configs: tuple[str, ...]
    R: float
    n: int


def informative(signals: ArrayLike) -> np.ndarray:
    """Which columns of `signals` (n, K) vary over the items (a boolean per column)."""
    X = np.asarray(signals, dtype=float)
    varies: np.ndarray = X.var(axis=0) > CONSTANT
    return varies


def cross_validated_r(y: ArrayLike, signals: ArrayLike) -> float | None:
    """The correlation of gold `y` (n,) with the cross-validated least-squares predictions from `signals` (n, K),
    with an intercept, clipped below at 0. None where it is undefined: fewer than MIN_ITEMS items or fewer than
    twice as many items as coefficients, gold constant, or no signal that varies."""
    y = np.asarray(y, dtype=float)
    X = np.asarray(signals, dtype=float)
    if X.ndim == 1:
        X = X[:, None]
    if X.shape[0] != y.size:
        raise ValueError(f"{y.size} gold values but {X.shape[0]} rows of signals")
    X = X[:, informative(X)]
    n, K = X.shape
    if K == 0 or n < max(MIN_ITEMS, 2 * (K + 1)) or np.var(y) <= CONSTANT:
        return None
    design = np.column_stack([np.ones(n), X])
    folds = KFold(n_splits=min(FOLDS, n), shuffle=n > FOLDS, random_state=SEED if n > FOLDS else None)
    predicted = np.empty(n)
    for train, test in folds.split(design):
        # lstsq: the minimum-norm fit where a fold leaves a signal constant or two signals equal.
        coef = np.linalg.lstsq(design[train], y[train], rcond=None)[0]
        predicted[test] = design[test] @ coef
    if np.var(predicted) <= CONSTANT:
        return 0.0
    return max(0.0, float(np.corrcoef(predicted, y)[0, 1]))
