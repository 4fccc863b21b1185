"""Labels where the judge is unsure: an audit order drawn with probabilities from the predictor's uncertainty, and
the inverse-probability-weighted betting tests that stay valid on it (issue 38, item 2).

Pure functions over arrays (numpy), no Django. Today's audits label a uniformly random order of the candidate's
outputs. Active statistical inference (Zrnic & Candes, "Active statistical inference", ICML 2024) labels with
higher probability where the model is unsure and weights each label by the inverse of its probability; this module
is the finite-population, anytime-valid version of it, inside the betting tests for sampling without replacement of
Waudby-Smith & Ramdas ("Confidence sequences for sampling without replacement", NeurIPS 2020) that audit_stats.py
runs.

The score. s_i in [0, 1] for each of the N outputs, fixed before the first label: the judge's vote share over its
repeated samples, or the mean of a jury's verdicts (audit_predictor.py's signals). A 0/1 verdict alone is never
unsure, and the design is then the uniform one.

The draw (`draw_order`). Each output has the weight u_i = sqrt(s_i (1 - s_i)), the standard deviation of a gold
drawn at the judge's score, which is what Zrnic & Candes's optimal sampling rule is proportional to. With R_t the
outputs not drawn before draw t (|R_t| = N - t + 1) and W_t = sum of u over R_t, draw t picks i in R_t with

    q_t(i) = floor / |R_t|  +  (1 - floor) u_i / W_t        (q_t(i) = 1 / |R_t| when W_t = 0),

a mixture of a uniform draw (share `floor`) and a draw proportional to the uncertainty. So q_t(i) >= floor / |R_t|:
no output's weight 1 / (|R_t| q_t(i)) exceeds 1 / floor (10 at a floor of 0.1). q_t reads only the scores and which
outputs are drawn, never a label, so the whole order is drawn once, by the server, from the seed, before any label,
as the uniform order is: it is fixed before each label and the queue releases its prefix.

The test of "theta <= m" (`unsure_log_capital`), theta the share of gold PASS over all N. Let yhat_t(i) in [0, 1]
be any prediction of y_i computed before draw t (here the scores' line fitted on the labels so far, shrunk towards
the score itself). After draw t of output I_t,

    Z_t = mean_{R_t}(yhat_t) + (y_{I_t} - yhat_t(I_t)) / (|R_t| q_t(I_t)).

Derivation of its conditional mean. Given the past (the draws and labels before t), I_t is drawn from q_t, so

    E[Z_t | past] = mean_{R_t}(yhat_t) + sum_{i in R_t} q_t(i) (y_i - yhat_t(i)) / (|R_t| q_t(i))
                  = mean_{R_t}(yhat_t) + mean_{R_t}(y) - mean_{R_t}(yhat_t) = mean_{R_t}(y),

the mean gold of the outputs not yet drawn: every q_t(i) > 0 is what lets the q's cancel (the floor guarantees it;
with an output at q = 0 its y_i - yhat_t(i) drops out of the sum and Z_t is biased). If theta = m the outputs not
yet drawn hold N m - S_t passes (S_t the passes drawn before t), so E[Z_t | past] = mu_t = (N m - S_t)/(N - t + 1),
exactly the null mean audit_stats' uniform test bets against; if theta < m it is below mu_t. So

    K_t = prod_{i <= t} (1 + beta_i (Z_i - mu_i)),  beta_i >= 0 chosen before draw i,

is a test martingale under theta = m and a supermartingale under theta < m, provided every factor is non-negative
for every value Z_i can take: Z_i >= z_min_i = mean_{R_i}(yhat_i) - max_{j in R_i} yhat_i(j) / (|R_i| q_i(j)) (the
value if the drawn output's gold is 0), so beta_i <= 1 / (mu_i - z_min_i) is enough. Ville's inequality then gives
P(sup_t K_t >= 1/a) <= a, under peeking after every label and for any predictable yhat, bets and q: it is the
argument of audit_stats' test with the uniform draw replaced by q_t and y by its inverse-probability-weighted
(augmented) form. With floor = 1 it is the uniform order with the control variate yhat.

The bets are audit_stats': the average of one Kelly bet per edge in EDGES (the drift of Z - mu is N d / (N - t + 1)
if theta = m + d, as in the uniform test), the variance of Z - mu from the labels so far shrunk towards 1/4 with
PRIOR_WEIGHT pseudo-labels, each bet capped at BET_SHARE of the largest safe one. The FAIL test is the same test
on 1 - gold and 1 - s; the weights u are symmetric in s <-> 1 - s, so it reads the same q. Pending gold counts
against the decision it would help, N/A as the tested value, the exact rule and MIN_GOLD apply: all through
audit_stats.tested_gold and audit_stats.first_decisions, as in the uniform audit.

What the floor buys. The weights reach 1 / floor, so the range of Z_t, and with it the largest safe bet, scales with
1 / floor: a small floor lets a few confident outputs (drawn rarely, but whose gold may contradict the judge) carry
huge weights, and the test must bet small to survive them. floor -> 0 costs labels (and at 0, with outputs never
drawn, validity is lost); floor = 1 is the uniform design. tests/calibration/stats/test_audit_unsure.py checks both
edges; bench/audit_unsure.py measures the cost.

Blindness (issue 41). The order depends on the scores only through u(s) = sqrt(s (1 - s)), which is the same for
s and 1 - s: flipping every verdict of the judge gives exactly the same order from the same seed
(`test_the_order_is_the_same_when_every_verdict_flips`). So no release, and no place in one, says which way the
judge leaned on an output, and since the draw reads no label it says nothing about the gold so far either. What a
release does carry is that its outputs are, on average, ones the judge was less sure of; annotators see the output
only (the queue's Next, as for every audit), never its score or its draw probability.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from typing import Any

import numpy as np
from numpy.typing import ArrayLike

from calibration.stats import audit_stats
from calibration.stats.audit_stats import (
    BET_SHARE,
    EDGES,
    MIN_GOLD,
    PRIOR_WEIGHT,
    AuditDecision,
    Decisions,
    Floats,
    Ints,
)

# The share of each draw that is uniform over the outputs not yet drawn (see the module's docstring). Measured in
# bench/audit_unsure.py (300 orders, 8 sets, distances 0.05 and 0.10, both sides): at 0.1 (the example) the
# median labels to a decision (the median over the sets) rose by 17 to 26 points of N over the uniform order with the
# same score, at 0.5 by 4 to 7, at 0.9 they were even (within about 1 point, the bench's noise). 0.9 is the least
# costly floor; none saves labels (docs/calibration.md, "Labels where the judge is unsure").
FLOOR = 0.9


def uncertainty(scores: ArrayLike) -> Floats:
    """u = sqrt(s (1 - s)): the standard deviation of a 0/1 gold whose chance of PASS is the score. Symmetric in
    s <-> 1 - s, so it never tells which way the judge leaned."""
    s = np.asarray(scores, dtype=float)
    # Rounded so that s and 1 - s (not always each other's exact mirror in floating point) get the very same u.
    return np.asarray(np.round(np.sqrt(np.clip(s * (1.0 - s), 0.0, None)), 12), dtype=np.float64)


def checked_scores(scores: Iterable[float | None]) -> Floats:
    s = np.array([np.nan if v is None else v for v in scores], dtype=float).ravel()
    if s.size == 0:
        raise ValueError("an audit needs at least one output")
    if np.isnan(s).any():
        # A missing score is imputed before the draw (audit_predictor.predictor does it with the signal's mean);
        # here it would silently change every probability.
        raise ValueError("every output needs a score in [0, 1] (impute missing ones before drawing the order)")
    if (s < 0).any() or (s > 1).any():
        raise ValueError("scores must lie in [0, 1]")
    return s


def checked_floor(floor: float) -> float:
    if not 0 < floor <= 1:
        raise ValueError(f"the floor must be in (0, 1] (0 would leave outputs that are never drawn), got {floor}")
    return float(floor)


def draw_probabilities(*, counts: Floats, weights: Floats, floor: float) -> Floats:
    """q per output of each level (S, L): floor / R + (1 - floor) u / W over the R outputs not yet drawn, counts
    (S, L) of them per level (outputs sharing a score), weights u (L,) of each level. Uniform when W = 0."""
    rest = counts.sum(axis=1, keepdims=True)
    total = (counts * weights).sum(axis=1, keepdims=True)
    with np.errstate(divide="ignore", invalid="ignore"):
        mixed = floor / rest + (1.0 - floor) * weights / total
        q: Floats = np.where(total > 0, mixed, 1.0 / rest)
    return q


def draw_order(*, scores: Iterable[float | None], floor: float = FLOOR, seed: int) -> Ints:
    """The audit order: the N output indices in the order they are drawn, each draw from q_t (the module's
    docstring), from `seed` alone. The server draws it when the plan starts and stores it, as the uniform order."""
    s = checked_scores(scores)
    floor = checked_floor(floor)
    rng = np.random.default_rng(seed)
    # Outputs are grouped by their weight u, not by their score: an output scored s and one scored 1 - s are in one
    # group, drawn in one uniformly random order of the group's indices, so a judge and its mirror image give the
    # same order from the same seed (blindness, the module's docstring).
    weights, group = np.unique(uncertainty(s), return_inverse=True)
    counts = np.bincount(group, minlength=weights.size)
    groups = draw_groups(counts=counts, weights=weights, floor=floor, rng=rng, S=1)[0]
    members = [rng.permutation(np.flatnonzero(group == j)) for j in range(weights.size)]
    taken = np.zeros(weights.size, dtype=int)
    order = np.empty(s.size, dtype=int)
    for t, j in enumerate(groups):
        order[t] = members[j][taken[j]]
        taken[j] += 1
    return order


def draw_levels(*, counts: Ints, values: Floats, floor: float, rng: np.random.Generator, S: int) -> Ints:
    """S draw sequences of the score levels (S, N): at each draw a level with probability count x q of its outputs
    (the same q per output as `draw_order`'s; the bench draws by score level to read the scores back)."""
    return draw_groups(counts=counts, weights=uncertainty(values), floor=floor, rng=rng, S=S)


def draw_groups(*, counts: Ints, weights: Floats, floor: float, rng: np.random.Generator, S: int) -> Ints:
    """S draw sequences (S, N) of groups of outputs with weights u (L,) and sizes `counts`: at each draw a group
    with probability count x q of its outputs."""
    left = np.broadcast_to(counts.astype(float), (S, weights.size)).copy()
    N = int(counts.sum())
    out = np.empty((S, N), dtype=np.int64)
    rows = np.arange(S)
    for t in range(N):
        chance = left * draw_probabilities(counts=left, weights=weights, floor=floor)
        cumulative = np.cumsum(chance, axis=1)
        pick = (cumulative < rng.random(S)[:, None] * cumulative[:, -1:]).sum(axis=1)
        # Rounding can point past the last level with outputs left, never to an empty one: clamp to a live level.
        pick = np.minimum(pick, weights.size - 1)
        empty = left[rows, pick] <= 0
        if empty.any():
            pick[empty] = np.argmax(left[empty] > 0, axis=1)
        out[:, t] = pick
        left[rows, pick] -= 1
    return out


def simulate_orders(
    *, gold: Floats, scores: Floats, floor: float, orders: int, rng: np.random.Generator
) -> tuple[Floats, Floats]:
    """Gold and scores (orders, N) along `orders` orders drawn as `draw_order` draws one (the same q for every
    output), for known-truth simulations: the score levels' sequence from q_t, each level's outputs in a uniformly
    random order."""
    values, level = np.unique(scores, return_inverse=True)
    counts = np.bincount(level, minlength=values.size)
    seq = draw_levels(counts=counts, values=values, floor=floor, rng=rng, S=orders)
    # The k-th draw of level j takes the k-th output of that level's random order.
    rank = np.zeros_like(seq)
    seen = np.zeros((orders, values.size), dtype=np.int64)
    rows = np.arange(orders)
    for t in range(seq.shape[1]):
        rank[:, t] = seen[rows, seq[:, t]]
        seen[rows, seq[:, t]] += 1
    ys = np.empty(seq.shape)
    for j in range(values.size):
        members = gold[level == j]
        shuffled = members[np.argsort(rng.random((orders, members.size)), axis=1)]
        where = seq == j
        ys[where] = shuffled[np.nonzero(where)[0], rank[where]]
    return ys, values[seq]


def unsure_log_capital(
    *, y: Floats, f: Floats, m: ArrayLike, floor: float = FLOOR, bet_share: float = BET_SHARE
) -> Floats:
    """log K_t of the test of "theta <= m" (bets >= 0) after each of the first T draws of an order drawn by
    `draw_order` with this floor.

    y: (S, T) the tested gold of the first T draws (in [0, 1]); f: (S, N) or (N,) the scores of all N outputs in
    each sequence's drawn order (the draws not yet labeled included: they are the outputs not yet drawn, whose
    scores q_t and the bounds read); m: the null, a scalar or one per sequence. The same signature as
    audit_stats.betting_log_capital, so audit_stats' confidence sequence runs on it."""
    y, f = np.atleast_2d(np.asarray(y, dtype=float)), np.atleast_2d(np.asarray(f, dtype=float))
    (S, T), N = y.shape, f.shape[1]
    if T > N:
        raise ValueError("more draws than outputs")
    m = np.broadcast_to(np.asarray(m, dtype=float), (S,))
    values, level = np.unique(f, return_inverse=True)
    level = level.reshape(f.shape)
    L = values.size
    weights = uncertainty(values)
    left = np.zeros((f.shape[0], L))
    np.add.at(left, (np.repeat(np.arange(f.shape[0]), N), level.ravel()), 1.0)
    left = np.broadcast_to(left, (S, L)).copy()
    rows = np.arange(S)
    level_rows = rows if f.shape[0] == S else np.zeros(S, dtype=int)
    s_y = np.zeros(S)
    s_s, s_ss, s_sy = np.zeros(S), np.zeros(S), np.zeros(S)
    dev_sum, dev_sq = np.zeros(S), np.zeros(S)
    log_k = np.zeros((S, EDGES.size))
    out = np.empty((S, T))
    w = PRIOR_WEIGHT
    for t in range(T):
        rest = N - t
        q = draw_probabilities(counts=left, weights=weights, floor=floor)
        inverse = 1.0 / (rest * q)  # the weight of a drawn output of each level, at most 1 / floor
        yhat = _prediction(values, t=t, s_y=s_y, s_s=s_s, s_ss=s_ss, s_sy=s_sy)
        rest_mean = (left * yhat).sum(axis=1) / rest
        mu = (N * m - s_y) / rest
        live = left > 0
        z_min = rest_mean - np.where(live, yhat * inverse, -np.inf).max(axis=1)
        j = level[level_rows, t]
        yt = y[:, t]
        z = rest_mean + (yt - yhat[rows, j]) * inverse[rows, j]
        var = (w * 0.25 + np.maximum(dev_sq - (dev_sum**2 / t if t else 0.0), 0.0)) / (t + w)
        beta = mixture_bets(var=var, drift=N / rest, room=mu - z_min, bet_share=bet_share)
        log_k += np.log1p(np.maximum(beta * (z - mu)[:, None], -1 + 1e-15))
        top = log_k.max(axis=1)
        out[:, t] = top + np.log(np.exp(log_k - top[:, None]).sum(axis=1))
        dev = z - mu
        dev_sum += dev
        dev_sq += dev * dev
        st = values[j]
        s_y += yt
        s_s += st
        s_ss += st * st
        s_sy += st * yt
        left[rows, j] -= 1
    return out - math.log(EDGES.size)


def mixture_bets(*, var: Floats, drift: float, room: Floats, bet_share: float) -> Floats:
    """audit_stats' bets (S, edges): Kelly for each edge d (the drift of Z - mu is d N / (N - t + 1) if theta = m + d),
    capped at bet_share / room, room = mu - z_min (no cap when every value of Z is at or above mu)."""
    gain = drift * EDGES
    kelly = gain / (var[:, None] + gain**2)
    safe = np.full(room.shape, 1e6)
    np.divide(bet_share, room, out=safe, where=room > 1e-12)
    bets: Floats = np.minimum(kelly, safe[:, None])
    return bets


def _prediction(values: Floats, *, t: int, s_y: Floats, s_s: Floats, s_ss: Floats, s_sy: Floats) -> Floats:
    """yhat per level (S, L) before draw t: the line of gold on the score fitted on the t labels so far (slope
    >= 0), clipped to [0, 1], shrunk towards the score itself with PRIOR_WEIGHT pseudo-labels. Any prediction fixed
    before the draw keeps the test valid; this one only has to be close to the gold to save labels."""
    if t < 2:
        fit = np.broadcast_to(values, (s_y.size, values.size))
    else:
        mean_s, mean_y = s_s / t, s_y / t
        var_s = s_ss / t - mean_s**2
        cov = s_sy / t - mean_s * mean_y
        with np.errstate(divide="ignore", invalid="ignore"):
            slope = np.where(var_s > 1e-12, np.maximum(cov / var_s, 0.0), 0.0)
        fit = np.clip(mean_y[:, None] + slope[:, None] * (values[None, :] - mean_s[:, None]), 0.0, 1.0)
    return (PRIOR_WEIGHT * values[None, :] + t * fit) / (PRIOR_WEIGHT + t)


def unsure_decide_each_label(
    *, gold: Floats, f: Floats, minimum: float, confidence: float, min_gold: int, floor: float = FLOOR
) -> Decisions:
    """audit_stats.decide_each_label on an order drawn by `draw_order`: gold (S, T) in that order (NaN pending,
    -1 N/A), f (S, N) or (N,) the scores in that order."""
    f = np.atleast_2d(np.asarray(f, dtype=float))
    y_for_pass, y_for_fail = audit_stats.tested_gold(gold=gold, minimum=minimum)
    log_k_pass = unsure_log_capital(y=y_for_pass, f=f, m=minimum, floor=floor)
    log_k_fail = unsure_log_capital(y=1.0 - y_for_fail, f=1.0 - f, m=1.0 - minimum, floor=floor)
    rule: dict[str, Any] = {"minimum": minimum, "confidence": confidence, "min_gold": min_gold}
    return audit_stats.first_decisions(gold=gold, N=f.shape[1], log_k_pass=log_k_pass, log_k_fail=log_k_fail, **rule)


def ipw_estimate(*, gold: Floats, f: Floats, floor: float = FLOOR) -> float | None:
    """For display: theta_hat = mean over the settled draws t of (S_t + |R_t| Z_t) / N, each term unbiased for the
    share of passes (Z_t as in the test, with yhat the score itself). None without settled gold, or with N/A gold
    (the decision's bounds are then the figures to read)."""
    g = np.asarray(gold, dtype=float)
    settled = ~np.isnan(g)
    if not settled.any() or (g == audit_stats.NOT_APPLICABLE).any():
        return None
    N = f.size
    values, level = np.unique(f, return_inverse=True)
    left = np.bincount(level, minlength=values.size).astype(float)[None, :]
    weights = uncertainty(values)
    terms, passes = [], 0.0
    for t in range(g.size):
        rest = N - t
        q = draw_probabilities(counts=left, weights=weights, floor=floor)[0]
        j = level[t]
        if settled[t]:
            z = float((left[0] * values).sum() / rest + (g[t] - values[j]) / (rest * q[j]))
            terms.append((passes + rest * z) / N)
            passes += g[t]
        left[0, j] -= 1
    return min(1.0, max(0.0, float(np.mean(terms))))


def unsure_decision(
    *,
    gold: Iterable[float | None],
    scores: Iterable[float | None],
    minimum: float,
    confidence: float = 0.95,
    min_gold: int = MIN_GOLD,
    floor: float = FLOOR,
) -> AuditDecision:
    """audit_stats.audit_decision for an order drawn by `draw_order(scores, floor, seed)`: gold of the labeled
    prefix of that order, scores of all N outputs in that order. The same rule (two one-sided tests at
    (1 - confidence)/2, the exact rule, min_gold) and anytime-valid bounds; the estimate is `ipw_estimate`."""
    if not 0 <= minimum <= 1:
        raise ValueError(f"minimum must be between 0 and 1, got {minimum}")
    if min_gold < 1:
        raise ValueError("min_gold must be at least 1")
    if not 0 < confidence < 1:
        raise ValueError(f"confidence must be between 0 and 1, got {confidence}")
    floor = checked_floor(floor)
    f = checked_scores(scores)
    g = audit_stats._as_float_array(gold, name="gold", allow_na=True)
    if g.size > f.size:
        raise ValueError(f"gold has {g.size} items but there are only {f.size} outputs")
    N = f.size
    d = unsure_decide_each_label(
        gold=g[None, :], f=f, minimum=minimum, confidence=confidence, min_gold=min_gold, floor=floor
    )

    def capital(*, y: Floats, f: Floats, m: ArrayLike) -> Floats:
        return unsure_log_capital(y=y, f=f, m=m, floor=floor)

    bounds = audit_stats._confidence_sequence(f=f, gold=g, confidence=confidence, capital=capital)
    settled = int((~np.isnan(g)).sum())
    estimate = audit_stats.PPIEstimate(ipw_estimate(gold=g, f=f, floor=floor), None, None, None, 0.0, settled, N, True)
    return audit_stats.decision_of(
        d, gold=g, N=N, bounds=bounds, estimate=estimate, rule=(minimum, confidence, min_gold)
    )
