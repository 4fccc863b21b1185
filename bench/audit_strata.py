"""Would sampling the judge's PASS and FAIL outputs at fixed shares pay? A measurement, not a goal bench.

    python bench/audit_strata.py                 # 500 orders per share (about 4 minutes)
    python bench/audit_strata.py --orders 100

docs/calibration.md ("Why not stratify by the judge's verdict") quotes its table. On the set where the audit
needs most labels (USR topical overall >= 4, bench/audit.py's loader, minimum 0.05 below and above the true
pass rate) it replays a stratified audit: the outputs split by the judge's verdict, each stratum labeled in
its own random order, the next label taken from the judge's PASS outputs while they are fewer than `share`
of the labels so far (until a stratum runs out). The test of "pass rate <= m" is the stratified one of
risk-limiting audits: for every integer split of the boundary (P1 + P0 = floor(m N) passes, P_h at most
N_h), the product of one betting test per stratum (audit_stats' mixture of Kelly bets without replacement,
its variance shrink and bet cap; no control variate, the judge is constant inside a stratum), rejected once
the smallest product over the splits reaches 2 / (1 - 0.95); the FAIL side on the complements. The exact
rule and the minimum of 20 gold items as in audit_stats. It prints the median labels to a decision (% of N)
per share beside the unstratified test's (audit_stats._decide on uniform orders).
"""

from __future__ import annotations

import argparse
import importlib.util
import math
import sys
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from calibration.audit_stats import BET_SHARE, EDGES, MIN_GOLD, PRIOR_WEIGHT, _decide  # noqa: E402

_spec = importlib.util.spec_from_file_location("bench_audit", ROOT / "bench" / "audit.py")
assert _spec and _spec.loader
bench_audit = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(bench_audit)

SHARES = (0.536, 0.58, 0.60, 0.62, 0.66, 0.74)
THRESHOLD = math.log(2 / (1 - 0.95))


def stratum_log_capital(y: np.ndarray, null_passes: np.ndarray) -> np.ndarray:
    """log capital (S, G, T + 1) of the test "passes in the stratum <= P" for each P in null_passes (G,),
    along S orders y (S, T) of a stratum of T outputs."""
    S, T = y.shape
    m = null_passes / T
    log_k = np.zeros((S, m.size, EDGES.size))
    out = np.zeros((S, m.size, T + 1))
    s_y = np.zeros(S)
    s_yy = np.zeros(S)
    for t in range(T):
        rest = T - t
        c = (T * m[None, :] - s_y[:, None]) / rest
        var = (PRIOR_WEIGHT * 0.25 + np.maximum(s_yy - (s_y**2 / t if t else 0.0), 0.0)) / (t + PRIOR_WEIGHT)
        gain = (T / rest) * EDGES
        beta = gain[None, None, :] / (var[:, None, None] + gain[None, None, :] ** 2)
        cap = np.where(c > 1e-12, BET_SHARE / np.maximum(c, 1e-12), 1e6)  # the smallest draw is 0
        beta = np.minimum(beta, cap[:, :, None])
        log_k += np.log1p(np.maximum(beta * (y[:, t, None] - c)[:, :, None], -1 + 1e-15))
        top = log_k.max(axis=2)
        out[:, :, t + 1] = top + np.log(np.exp(log_k - top[:, :, None]).sum(axis=2)) - math.log(EDGES.size)
        s_y += y[:, t]
        s_yy += y[:, t] ** 2
    return out


def stratified_median(gold: np.ndarray, judge: np.ndarray, minimum: float, share: float, orders: int, seed: int):
    """Median labels to a decision (as a share of N) of the stratified audit (the right side's test only)."""
    rng = np.random.default_rng(seed)
    right_pass = gold.mean() >= minimum
    if not right_pass:  # the FAIL test is the PASS test on the complements; the strata stay the judge's
        gold, minimum = 1 - gold, 1 - minimum
    strata = [gold[judge == 1], gold[judge == 0]]
    sizes = [s.size for s in strata]
    N = sum(sizes)
    cap = math.floor(minimum * N + 1e-9)
    p1 = np.arange(max(0, cap - sizes[1]), min(sizes[0], cap) + 1)
    splits = [p1.astype(float), (cap - p1).astype(float)]
    ys = [np.stack([s[rng.permutation(s.size)] for _ in range(orders)]) for s in strata]
    log_k = [stratum_log_capital(ys[h], splits[h]) for h in (0, 1)]
    taken = [0, 0]
    at = np.full(orders, N)
    done = np.zeros(orders, dtype=bool)
    for t in range(1, N + 1):
        h = 0 if (taken[0] < sizes[0] and taken[0] < share * t) or taken[1] >= sizes[1] else 1
        taken[h] += 1
        smallest = (log_k[0][:, :, taken[0]] + log_k[1][:, :, taken[1]]).min(axis=1)
        passes = ys[0][:, : taken[0]].sum(axis=1) + ys[1][:, : taken[1]].sum(axis=1)
        hit = ((smallest >= THRESHOLD) & (t >= MIN_GOLD)) | (passes >= minimum * N - 1e-9)
        at[hit & ~done] = t
        done |= hit
        if done.all():
            break
    return float(np.median(at)) / N


def unstratified_median(gold: np.ndarray, judge: np.ndarray, minimum: float, orders: int, seed: int) -> float:
    rng = np.random.default_rng(seed)
    perm = np.argsort(rng.random((orders, gold.size)), axis=1)
    d = _decide(gold=gold[perm], f=judge[perm], minimum=minimum, confidence=0.95, min_gold=MIN_GOLD)
    return float(np.median(d.at)) / gold.size


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--orders", type=int, default=500)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    base = bench_audit.datasets_dir()
    if not base.is_dir():
        print(f"no datasets at {base}: set ICEWATER_DATASETS_DIR", file=sys.stderr)
        return 1
    name, gold, judge = next(s for s in bench_audit.usr(base) if s[0].startswith("usr topical overall"))
    theta = float(gold.mean())
    print(f"{name}: N = {gold.size}, true pass rate {theta:.3f}, judge PASS share {judge.mean():.3f}")
    print("median labels to a decision, % of N, minimum 0.05 below / above the truth")
    sides = (theta - 0.05, theta + 0.05)
    flat = [unstratified_median(gold, judge, m, args.orders, args.seed) for m in sides]
    print(f"  {'unstratified':>28}: {100 * flat[0]:5.1f} / {100 * flat[1]:5.1f}")
    for share in SHARES:
        figures = [stratified_median(gold, judge, m, share, args.orders, args.seed) for m in sides]
        print(f"  {f'stratified, PASS share {share:.3f}':>28}: {100 * figures[0]:5.1f} / {100 * figures[1]:5.1f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
