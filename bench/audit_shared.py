"""One audit sample for every gating criterion against k separate plans: labels to the release's decision.

    python bench/audit_shared.py [--orders 500] [--N 1000] [--seed 0]

Known-truth candidates (calibration/stats/shared_population.py): N outputs, k = 2 or 3 criteria with pass rates
0.7, 0.8, 0.6, each judge passing 0.75, 0.8, 0.6 with correlation about 0.5 to its gold; "independent" criteria
(neither gold nor judges' errors related) and "correlated" ones (gold correlated about 0.5, judges' noise shared).
Two sides: PASS (every minimum `margin` below its truth: the release deserves to pass) and FAIL (criterion 0's
minimum `margin` above its truth, the others below: one criterion fails it); and margin 0, every minimum at its
truth, where a FAIL is wrong: the row that shows the conjunction's level. Every criterion uniform.

Columns, labels (outputs opened, each labeled on every criterion) to the release's decision, % of N, median /
worst of the orders, and the wrong decisions:
- shared: one order, each PASS test at alpha, each FAIL test at alpha / k (calibration/stats/audit_shared.py);
- today, one order: k plans on the eval set's one order (labeling/audit_order.py shares it) each at alpha per
  side: the labels of the shared sample, but the FAIL side's conjunction is not valid (up to k alpha);
- separate orders: k plans each on its own random order, at alpha per side, labeled side by side (a round labels
  the next output of every undecided plan); an output two plans ask for is labeled once.

A second table, on the FAIL rows: the labels until the FAIL tests fail the release, by the union bound (a criterion's
capital reaching k / alpha) against the mean of the k FAIL capitals reaching 1 / alpha (combined e-values, which name
no criterion; audit_shared.py's docstring), the tests alone (no exact rule), from label MIN_GOLD on.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from calibration.stats.audit_shared import conjunction, release_decisions_each_order  # noqa: E402
from calibration.stats.audit_stats import FAIL, MIN_GOLD, PASS, decide_each_label, judge_scores  # noqa: E402
from calibration.stats.shared_population import SharedPopulation, shared_population  # noqa: E402

THETAS = (0.7, 0.8, 0.6)
RATES = (0.75, 0.8, 0.6)
CONFIDENCE = 0.95


def _separate(pop: SharedPopulation, orders: list[np.ndarray], minimums: list[float]) -> tuple[np.ndarray, np.ndarray]:
    """k plans on k independent orders: the release's decision and the distinct outputs labeled (S,)."""
    k, N = pop.gold.shape
    decided, at = [], []
    for j in range(k):
        r = release_decisions_each_order(
            golds=[pop.gold[j][orders[j]]],
            scores=[judge_scores(verdicts=pop.verdicts[j])[orders[j]]],
            minimums=[minimums[j]],
            confidence=CONFIDENCE,
        )
        decided.append(r.decided)
        at.append(np.where(r.at > 0, r.at, N))
    per_decided, per_at = np.stack(decided), np.stack(at)
    release, rounds = conjunction(per_decided, per_at)
    rounds = np.where(rounds > 0, rounds, N)
    S = per_at.shape[1]
    labeled = np.zeros((S, N), dtype=bool)
    rows = np.arange(S)[:, None]
    for j in range(k):
        upto = np.minimum(per_at[j], rounds)  # a plan stops at its own decision or the release's
        mask = np.arange(N)[None, :] < upto[:, None]
        labeled[rows, orders[j]] |= mask
    return release, labeled.sum(axis=1)


def _fail_times(golds: list[np.ndarray], scores: list[np.ndarray], minimums: list[float]) -> tuple[np.ndarray, ...]:
    """Labels until the FAIL tests fail the release (N + 1 if never): by the union bound, and by the mean of the
    capitals."""
    k = len(golds)
    alpha = (1 - CONFIDENCE) / 2
    logs = np.stack(
        [
            decide_each_label(gold=g, f=f, minimum=m, confidence=CONFIDENCE, min_gold=MIN_GOLD).log_k_fail
            for g, f, m in zip(golds, scores, minimums, strict=True)
        ]
    )  # (k, S, T)
    T = logs.shape[2]
    allowed = np.arange(T) + 1 >= MIN_GOLD

    def first(crossed: np.ndarray) -> np.ndarray:
        crossed = crossed & allowed[None, :]
        return np.where(crossed.any(axis=1), crossed.argmax(axis=1) + 1, T + 1)

    union = first((logs >= np.log(k / alpha)).any(axis=0))
    top = logs.max(axis=0)
    mean = top + np.log(np.exp(logs - top[None]).mean(axis=0))
    return union, first(mean >= np.log(1 / alpha))


def _cell(decided: np.ndarray, labels: np.ndarray, N: int, right: str) -> str:
    wrong = ((decided != "") & (decided != right)).mean()
    share = 100 * labels / N
    return f"{np.median(share):5.1f} / {share.max():5.1f} ({100 * wrong:.1f}%)"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--orders", type=int, default=500)
    parser.add_argument("--N", type=int, default=1000)
    parser.add_argument("--seed", type=int, default=0)
    args = parser.parse_args()
    started = time.time()
    emean_rows = []
    print(f"labels to the release's decision, % of N = {args.N}: median / worst of {args.orders} orders (wrong)")
    print("| k | criteria | margin | side | shared sample | today, one order (FAIL side invalid) | separate orders |")
    print("|---|---|---|---|---|---|---|")
    for k in (2, 3):
        for correlated in (False, True):
            pop = shared_population(
                N=args.N,
                thetas=THETAS[:k],
                judge_rates=RATES[:k],
                rho=0.9 if correlated else 0.0,
                judge_shared=0.7 if correlated else 0.0,
                seed=args.seed,
            )
            shared_orders = pop.orders(args.orders, seed=args.seed + 1)
            own_orders = [pop.orders(args.orders, seed=args.seed + 2 + j) for j in range(k)]
            golds = [g[shared_orders] for g in pop.gold]
            scores = [judge_scores(verdicts=v)[shared_orders] for v in pop.verdicts]
            for margin in (0.0, 0.05, 0.10):
                for side in (PASS, FAIL) if margin else (PASS,):
                    minimums = [t - margin for t in THETAS[:k]]
                    if side == FAIL:
                        minimums[0] = THETAS[0] + margin
                    cells = []
                    for union_bound in (True, False):
                        r = release_decisions_each_order(
                            golds=golds,
                            scores=scores,
                            minimums=minimums,
                            confidence=CONFIDENCE,
                            union_bound=union_bound,
                        )
                        cells.append(_cell(r.decided, np.where(r.at > 0, r.at, args.N), args.N, side))
                    release, labels = _separate(pop, own_orders, minimums)
                    cells.append(_cell(release, labels, args.N, side))
                    kind = "correlated" if correlated else "independent"
                    if side == FAIL:
                        union, mean = _fail_times(golds, scores, minimums)
                        shares = [100 * np.minimum(t, args.N) / args.N for t in (union, mean)]
                        emean_rows.append(
                            f"| {k} | {kind} | {margin:.2f} | "
                            + " | ".join(f"{np.median(x):5.1f} / {x.max():5.1f}" for x in shares)
                            + " |"
                        )
                    print(f"| {k} | {kind} | {margin:.2f} | {side} | " + " | ".join(cells) + " |", flush=True)
    print()
    print("FAIL rows, the tests alone: labels until the FAIL tests fail the release, % of N, median / worst")
    print("| k | criteria | margin | union bound (alpha / k each) | mean of the e-values (1 / alpha) |")
    print("|---|---|---|---|---|")
    for row in emean_rows:
        print(row)
    print(f"({time.time() - started:.0f} s)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
