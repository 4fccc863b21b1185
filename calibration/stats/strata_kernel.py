"""The stratified test's inner loop, compiled: each edge's capital at each null total multiplied through a block of
draws (audit_strata.Running.advance), without the (draws x sequences x edges x null totals) arrays numpy needs.

A forecast on a large candidate walks each simulation through tens of thousands of labels, every label a factor
per edge and null total: numpy spends about a nanosecond a cell on each of the six passes over those arrays
(min, times, plus, the running product, the sum over the edges), 14 s of CPU at N = 100,000 with the minimum at
the truth (issue 37, item 2). One compiled pass does the same arithmetic, operation for operation and in the same
order: the factor (min(beta, cap) * (y - c)) + 1, the running product from the capital, the edges summed one
after another as numpy sums a middle axis, no fused multiply-add (numba contracts nothing without fastmath). So
the numbers are the numpy expressions' to the bit (tests/calibration/stats/test_strata_kernel.py holds them).
Compiled on first use and cached beside the module (numba's cache=True; elsewhere when that is read-only).
"""

from __future__ import annotations

import numpy as np
from numba import njit

from calibration.stats.audit_stats import Floats


def _running(beta: Floats, cap: Floats, yc: Floats, capital: Floats) -> tuple[Floats, Floats]:
    B, S, E = beta.shape
    G = cap.shape[2]
    total = np.empty((B, S, G))
    last = np.empty((S, E, G))
    for s in range(S):
        p = capital[s].copy()  # (E, G): each edge's capital at each null total, draw after draw
        for b in range(B):
            for e in range(E):
                edge = beta[b, s, e]
                for g in range(G):  # contiguous and independent: the compiler vectorises it
                    bet = cap[b, s, g] if cap[b, s, g] < edge else edge
                    p[e, g] = (bet * yc[b, s, g] + 1.0) * p[e, g]
                if e == 0:
                    total[b, s, :] = p[0]
                else:
                    for g in range(G):
                        total[b, s, g] += p[e, g]
        last[s] = p
    return total, last


def _through(beta: Floats, cap: Floats, yc: Floats, capital: Floats) -> Floats:
    B, S, E = beta.shape
    G = cap.shape[2]
    out = np.empty((S, E, G))
    for s in range(S):
        p = np.empty((E, G))  # the product of the block's factors, draw after draw
        for b in range(B):
            for e in range(E):
                edge = beta[b, s, e]
                for g in range(G):
                    bet = cap[b, s, g] if cap[b, s, g] < edge else edge
                    f = bet * yc[b, s, g] + 1.0
                    p[e, g] = f if b == 0 else p[e, g] * f
        out[s] = capital[s] * p
    return out


_running_compiled = njit(cache=True, nogil=True)(_running)
_through_compiled = njit(cache=True, nogil=True)(_through)


def running_products(beta: Floats, cap: Floats, yc: Floats, capital: Floats) -> tuple[Floats, Floats]:
    """Draw by draw (B) of S sequences: each edge's capital (S, E, G) times the factors (min(beta, cap)(y - c) + 1)
    (beta (B, S, E), cap and y - c (B, S, G)); the sum over the edges after each draw (B, S, G) and the capitals
    after the last (S, E, G)."""
    parts = (np.ascontiguousarray(beta), np.ascontiguousarray(cap), np.ascontiguousarray(yc))
    return _running_compiled(*parts, np.ascontiguousarray(capital))


def through_block(beta: Floats, cap: Floats, yc: Floats, capital: Floats) -> Floats:
    """The capitals after the whole block only: capital times the product of the block's factors."""
    parts = (np.ascontiguousarray(beta), np.ascontiguousarray(cap), np.ascontiguousarray(yc))
    return _through_compiled(*parts, np.ascontiguousarray(capital))
