"""Would stratifying the audit by the judge's verdict pay? A measurement for the next design, not a goal bench.

    python bench/audit_strata.py                 # 500 orders (about 20 minutes)
    python bench/audit_strata.py --orders 60     # a quick look
    python bench/audit_strata.py --batched       # only the design as a plan would run it (about 10 minutes)

docs/calibration.md ("Why not stratify by the judge's verdict") quotes its tables. It replays a stratified
audit: the outputs split by the judge's verdict, each stratum labeled in its own random order, the next label
taken from the judge's PASS outputs either at a fixed `share` of the labels so far, or chosen label by label
from the labels before it (`_adaptive`), until a stratum runs out. The test of "pass rate <= m" is the
stratified one of risk-limiting audits: for every integer split of the boundary (P1 + P0 = floor(m N)
passes, P_h at most N_h), the product of one betting test per stratum (audit_stats' mixture of Kelly bets
without replacement, its variance shrink and bet cap; no control variate, the judge is constant inside a
stratum), rejected once the smallest product over the splits reaches 2 / (1 - 0.95); the FAIL side on the
complements. The exact rule and the minimum of 20 gold items as in audit_stats. It prints the median labels to
a decision (% of N) beside the unstratified test's (audit_stats.decide_each_label on uniform orders): every fixed
share on USR topical overall >= 4, where the audit needs most labels; the adaptive choice on eight sets; and the
adaptive test's wrong decisions at the hardest null (known truth).

--batched measures calibration/stats/audit_strata.py, the design as a plan would run it: the stratum chosen per batch
of 25 labels from the labels before it (not label by label), both sides' tests at once (the bench above tests only
the side the truth is on), N/A-safe real-valued splits (a grid refined near the hardest split), the judge's PASS
stratum against everything else.
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

from calibration.stats import audit_strata  # noqa: E402
from calibration.stats.audit_stats import MIN_GOLD, decide_each_label  # noqa: E402

_spec = importlib.util.spec_from_file_location("bench_audit", ROOT / "bench" / "audit.py")
assert _spec and _spec.loader
bench_audit = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(bench_audit)

SHARES = (0.536, 0.58, 0.60, 0.62, 0.66, 0.74)
THRESHOLD = math.log(2 / (1 - 0.95))


def stratum_log_capital(y: np.ndarray, null_passes: np.ndarray) -> np.ndarray:
    """log capital (S, G, T + 1) of the test "passes in the stratum <= P" for each P in null_passes (G,),
    along S orders y (S, T) of a stratum of T outputs (calibration/stats/audit_strata.py's test)."""
    return audit_strata.stratum_log_capital(y=y, nulls=null_passes, size=y.shape[1])


def stratified_median(
    gold: np.ndarray, judge: np.ndarray, minimum: float, share: float | None, orders: int, seed: int
) -> float:
    """Median labels to a decision (as a share of N) of the stratified audit, the right side's test only: the
    judge's PASS outputs at a fixed `share` of the labels, or chosen label by label (`share` None: `_adaptive`)."""
    rng = np.random.default_rng(seed)
    if gold.mean() < minimum:  # the FAIL test is the PASS test on the complements; the strata stay the judge's
        gold, minimum = 1 - gold, 1 - minimum
    strata = [gold[judge == 1], gold[judge == 0]]
    sizes = np.array([s.size for s in strata])
    cap = math.floor(minimum * sizes.sum() + 1e-9)
    p1 = np.arange(max(0, cap - sizes[1]), min(sizes[0], cap) + 1)
    splits = (p1.astype(float), (cap - p1).astype(float))
    ats = []
    chunk = max(1, 20_000_000 // (p1.size * int(sizes.max() + 1)))  # orders replayed at once: memory bound
    for start in range(0, orders, chunk):
        ys = [np.stack([s[rng.permutation(s.size)] for _ in range(min(chunk, orders - start))]) for s in strata]
        ats.append(_replay(ys, sizes, splits, minimum, share)[0])
    return float(np.median(np.concatenate(ats))) / sizes.sum()


def null_rejections(gold: np.ndarray, judge: np.ndarray, orders: int, seed: int) -> float:
    """Known truth at the hardest null, the minimum exactly the pass rate: the share of orders in which the
    adaptive stratified test rejects "pass rate <= minimum" at any label (each is a wrong PASS; at most 2.5%)."""
    rng = np.random.default_rng(seed)
    strata = [gold[judge == 1], gold[judge == 0]]
    sizes = np.array([s.size for s in strata])
    cap = int(gold.sum())
    p1 = np.arange(max(0, cap - sizes[1]), min(sizes[0], cap) + 1)
    splits = (p1.astype(float), (cap - p1).astype(float))
    crossed = []
    chunk = max(1, 20_000_000 // (p1.size * int(sizes.max() + 1)))
    for start in range(0, orders, chunk):
        ys = [np.stack([s[rng.permutation(s.size)] for _ in range(min(chunk, orders - start))]) for s in strata]
        crossed.append(_replay(ys, sizes, splits, cap / sizes.sum(), None, until_end=True)[1])
    return float(np.concatenate(crossed).mean())


def _replay(
    ys: list[np.ndarray], sizes: np.ndarray, splits: tuple, minimum: float, share: float | None, until_end: bool = False
) -> tuple[np.ndarray, np.ndarray]:
    """The label each order decides at (the test or the exact rule), and whether the test crossed its threshold
    (at any label with `until_end`, else by the decision)."""
    S = ys[0].shape[0]
    N = int(sizes.sum())
    rows = np.arange(S)
    log_k = [stratum_log_capital(ys[h], splits[h]) for h in (0, 1)]
    passes = [np.concatenate([np.zeros((S, 1)), np.cumsum(ys[h], axis=1)], axis=1) for h in (0, 1)]
    taken = np.zeros((S, 2), dtype=int)
    at = np.full(S, N)
    done = np.zeros(S, dtype=bool)
    crossed = np.zeros(S, dtype=bool)
    for t in range(1, N + 1):
        if share is None:
            h = _adaptive(log_k, passes, taken, sizes, splits, t)
        else:
            h = np.where(taken[:, 0] < share * t, 0, 1)
        h = np.where(taken[:, 0] >= sizes[0], 1, np.where(taken[:, 1] >= sizes[1], 0, h))  # until one runs out
        taken[rows, h] += 1
        smallest = (log_k[0][rows, :, taken[:, 0]] + log_k[1][rows, :, taken[:, 1]]).min(axis=1)
        total = passes[0][rows, taken[:, 0]] + passes[1][rows, taken[:, 1]]
        crossed |= smallest >= THRESHOLD
        hit = ((smallest >= THRESHOLD) & (t >= MIN_GOLD)) | (total >= minimum * N - 1e-9)
        at[hit & ~done] = t
        done |= hit
        if done.all() and not until_end:
            break
    return at, crossed


# The adaptive choice keeps at least this share of the labels in each stratum (while it lasts).
FLOOR = 0.10


def _adaptive(log_k, passes, taken, sizes, splits, t: int) -> np.ndarray:
    """The stratum of label t, from the labels before it only (so each stratum's test stays a test martingale):
    the split of the null that is hardest to reject so far, and the stratum whose next label should grow its
    test more there: (estimated rate - the split's null mean of the next draw)^2 / variance, the larger one;
    each stratum keeps at least FLOOR of the labels."""
    rows = np.arange(taken.shape[0])
    worst = np.argmin(log_k[0][rows, :, taken[:, 0]] + log_k[1][rows, :, taken[:, 1]], axis=1)
    score = []
    for h in (0, 1):
        n, rest = taken[:, h], sizes[h] - taken[:, h]
        s = passes[h][rows, n]
        null_mean = (splits[h][worst] - s) / np.maximum(rest, 1)
        rate = (s + 1) / (n + 2)
        score.append(np.maximum(rate - null_mean, 0) ** 2 / (rate * (1 - rate) + 0.01))
    h = np.where(score[0] >= score[1], 0, 1)
    return np.where(taken[:, 0] < FLOOR * t, 0, np.where(taken[:, 1] < FLOOR * t, 1, h))


BATCHED_SETS = (
    "usr topical overall>=4 (rater 0)",
    "usr topical uses_knowledge (rater 0)",
    "usr persona uses_knowledge (rater 0)",
    "usr persona overall>=4 (rater 0)",
    "qags factual (rater 0)",
    "synthetic phi=0.3",
    "synthetic phi=0.6",
    "synthetic phi=0.8",
)


def batched(gold: np.ndarray, judge: np.ndarray, minimum: float, orders: int, seed: int) -> tuple[float, float]:
    """Median labels to a decision (share of N) and the wrong-decision rate of calibration.audit_strata.replay."""
    rng = np.random.default_rng(seed)
    strata = audit_strata.strata_of(judge)
    parts = [gold[strata == h] for h in (0, 1)]
    decided, at = [], []
    for start in range(0, orders, 100):
        n = min(100, orders - start)
        sequences = tuple(np.stack([p[rng.permutation(p.size)] for _ in range(n)]) for p in parts)
        d, a = audit_strata.replay(gold=sequences, start=np.zeros((n, 2), int), minimum=minimum)  # type: ignore[arg-type]
        decided.append(d)
        at.append(a)
    right = "PASS" if gold.mean() >= minimum else "FAIL"
    return float(np.median(np.concatenate(at))) / gold.size, float(np.mean(np.concatenate(decided) != right))


def unstratified_median(gold: np.ndarray, judge: np.ndarray, minimum: float, orders: int, seed: int) -> float:
    rng = np.random.default_rng(seed)
    perm = np.argsort(rng.random((orders, gold.size)), axis=1)
    d = decide_each_label(gold=gold[perm], f=judge[perm], minimum=minimum, confidence=0.95, min_gold=MIN_GOLD)
    return float(np.median(d.at)) / gold.size


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--orders", type=int, default=500)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--batched", action="store_true", help="only calibration/stats/audit_strata.py's design")
    args = parser.parse_args()
    base = bench_audit.datasets_dir()
    if not base.is_dir():
        print(f"no datasets at {base}: set ICEWATER_DATASETS_DIR", file=sys.stderr)
        return 1
    sets = {
        name: (gold, judge)
        for source in (bench_audit.usr(base), bench_audit.qags(base))
        for name, gold, judge in source
    }
    sets |= {name: (gold, judge) for name, gold, judge in bench_audit.synthetic()}
    if args.batched:
        print("stats/audit_strata.py (batches of 25, both sides) against unstratified: median % of N (wrong %),")
        print("minimum below / above the truth")
        for name in BATCHED_SETS:
            gold, judge = sets[name]
            theta = float(gold.mean())
            for distance in (0.05, 0.10):
                sides = (theta - distance, theta + distance)
                ours = [batched(gold, judge, m, args.orders, args.seed) for m in sides]
                flat = [unstratified_median(gold, judge, m, args.orders, args.seed) for m in sides]
                print(
                    f"  {name:>36} {distance:.2f}: stratified {100 * ours[0][0]:5.1f} ({100 * ours[0][1]:.1f})"
                    f" / {100 * ours[1][0]:5.1f} ({100 * ours[1][1]:.1f}), unstratified {100 * flat[0]:5.1f} /"
                    f" {100 * flat[1]:5.1f}",
                    flush=True,
                )
        return 0
    name = "usr topical overall>=4 (rater 0)"
    gold, judge = sets[name]
    theta = float(gold.mean())
    print(f"{name}: N = {gold.size}, true pass rate {theta:.3f}, judge PASS share {judge.mean():.3f}")
    print("median labels to a decision, % of N, minimum 0.05 below / above the truth")
    sides = (theta - 0.05, theta + 0.05)
    flat = [unstratified_median(gold, judge, m, args.orders, args.seed) for m in sides]
    print(f"  {'unstratified':>36}: {100 * flat[0]:5.1f} / {100 * flat[1]:5.1f}")
    for share in (*SHARES, None):
        figures = [stratified_median(gold, judge, m, share, args.orders, args.seed) for m in sides]
        how = f"PASS share {share:.3f}" if share is not None else f"adaptive, floor {FLOOR:.2f}"
        print(f"  {f'stratified, {how}':>36}: {100 * figures[0]:5.1f} / {100 * figures[1]:5.1f}")
    print("\nknown truth, the minimum exactly the pass rate: adaptive test's wrong PASS (at most 2.5%)")
    for N, theta, phi in ((300, 0.5, 0.8), (360, 0.42, 0.74), (300, 0.7, 0.6)):
        gold, judge = next(bench_audit.synthetic(N=N, theta=theta, judge_rate=theta + 0.05, phis=(phi,)))[1:]
        rate = null_rejections(gold, judge, 2 * args.orders, args.seed)
        print(f"  N {N}, pass rate {theta}, phi {phi}: {100 * rate:.1f}% of {2 * args.orders} orders")
    print("\nadaptive against unstratified, % of N, minimum below / above the truth")
    for name in BATCHED_SETS:
        gold, judge = sets[name]
        theta = float(gold.mean())
        for distance in (0.05, 0.10):
            sides = (theta - distance, theta + distance)
            flat = [unstratified_median(gold, judge, m, args.orders, args.seed) for m in sides]
            adaptive = [stratified_median(gold, judge, m, None, args.orders, args.seed) for m in sides]
            print(
                f"  {name:>36} {distance:.2f}: adaptive {100 * adaptive[0]:5.1f} / {100 * adaptive[1]:5.1f},"
                f" unstratified {100 * flat[0]:5.1f} / {100 * flat[1]:5.1f}",
                flush=True,
            )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
