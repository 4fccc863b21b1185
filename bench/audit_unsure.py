"""Labels where the judge is unsure (calibration/stats/audit_unsure.py) beside today's uniform and stratified designs:
labels to a decision per side (median and worst order) and wrong decisions.

    python bench/audit_unsure.py --orders 300 --distances 0.05 0.10   # the figures in docs/calibration.md (727 s)
    python bench/audit_unsure.py                          # 500 orders per set and threshold
    python bench/audit_unsure.py --orders 100 --only usr --floors 0.1 0.3
    python bench/audit_unsure.py --no-stratified          # skip the (slow) stratified design

Designs, each replayed on --orders orders of every set, 95% confidence (2.5% per side), the exact rule, at least 20
gold items:
- "uniform 1 bit": today's default plan, one uniformly random order, one judge's PASS/FAIL as the control variate
  (audit_stats.py).
- "stratified 1 bit": today's stratified plan, the same judge's PASS outputs and the rest, counted along the uniform
  order (blind releases, audit_strata.py).
- "uniform score": the uniform order with the score the unsure design reads as the control variate (what the score
  saves without changing who is labeled).
- "unsure F": the order drawn with probabilities floor F of uniform plus (1 - F) in proportion to sqrt(s (1 - s)),
  the inverse-probability-weighted betting tests (audit_unsure.py).

Sets (bench/audit_jury.py's readers, bench/audit.py's datasets and thresholds): the public sets' three raters, gold
rater 2, the one-bit judge rater 0, the score the mean of raters 0 and 1 (0, 1/2 or 1: "unsure" where they
disagree; XSum's Entailment left out, it tells almost nothing); the synthetic jury (three judges of correlation
0.3, 0.5 and 0.7, the score their mean, one bit the best); five samples of one judge (the score their vote share,
one bit their majority). bench/audit.py's one-bit synthetic sets have no score between 0 and 1: there the unsure
design is the uniform one.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench.audit_common import CONFIDENCE, DISTANCES, datasets_dir, stratified_decisions, thresholds  # noqa: E402
from bench.audit_jury import Set, qags, synthetic_jury, synthetic_samples, usr, xsum  # noqa: E402
from calibration.stats import audit_strata  # noqa: E402
from calibration.stats.audit_stats import FAIL, MIN_GOLD, PASS, decide_each_label  # noqa: E402
from calibration.stats.audit_unsure import simulate_orders, unsure_decide_each_label  # noqa: E402


def score_of(item: Set) -> np.ndarray:
    """The score the unsure design draws by: the mean of the jury's raters (or judges, or the vote share)."""
    name, _gold, _judge, signals, names = item
    raters = [k for k, n in enumerate(names) if n.startswith("rater") or n.startswith("phi") or n == "vote share"]
    return signals[:, raters].mean(axis=1)


def ceiling(gold: np.ndarray, score: np.ndarray) -> float:
    """What the best sampling rule could save at most: with each score level's gold rate p known (an oracle), the
    variance of the weighted estimate with q proportional to the residual's standard deviation sqrt(p (1 - p))
    (Zrnic & Candes's optimum) over the uniform draw's, both with that oracle as the predictor: (E sd)^2 / E var."""
    _values, level = np.unique(score, return_inverse=True)
    share = np.bincount(level) / score.size
    p = np.bincount(level, weights=gold) / np.bincount(level)
    var = p * (1 - p)
    return float(np.sum(share * np.sqrt(var)) ** 2 / np.sum(share * var))


def run(
    item: Set,
    *,
    orders: int,
    rng: np.random.Generator,
    rows: list[dict],
    distances: tuple[float, ...],
    floors: tuple[float, ...],
    stratified: bool,
) -> None:
    name, gold, judge, _signals, _names = item
    score = score_of(item)
    N = gold.size
    theta = float(gold.mean())
    perm = np.argsort(rng.random((orders, N)), axis=1)
    ys = gold[perm]
    strata = audit_strata.strata_of(judge)[perm]
    strata_gold = tuple(ys[strata == h].reshape(orders, -1) for h in (0, 1))
    drawn = {f: simulate_orders(gold=gold, scores=score, floor=f, orders=orders, rng=rng) for f in floors}
    phi_judge = float(np.corrcoef(gold, judge)[0, 1])
    phi_score = float(np.corrcoef(gold, score)[0, 1])
    unsure_share = float((score * (1 - score) > 0).mean())
    print(
        f"\n{name}: N = {N}, theta {theta:.3f}; one bit phi {phi_judge:.2f}; score phi {phi_score:.2f},"
        f" {100 * unsure_share:.0f}% of outputs with 0 < score < 1; the best sampling rule's variance / uniform's"
        f" (oracle) {ceiling(gold, score):.2f}"
    )
    designs = ["uniform 1 bit", *(["stratified 1 bit"] if stratified else []), "uniform score"]
    designs += [f"unsure {f:g}" for f in floors]
    print(f"  {'minimum':>8} {'dist':>6} {'right':>5} | " + " | ".join(f"{d:>16} worst wrong%" for d in designs))
    for distance, sign, minimum, right in thresholds(theta, distances):
        cells = []
        for design in designs:
            if design == "stratified 1 bit":
                decided, at = stratified_decisions(strata_gold, minimum, strata)  # type: ignore[arg-type]
            elif design.startswith("uniform"):
                f = judge[perm] if design == "uniform 1 bit" else score[perm]
                d = decide_each_label(gold=ys, f=f, minimum=minimum, confidence=CONFIDENCE, min_gold=MIN_GOLD)
                decided, at = d.decided, d.at
            else:
                floor = float(design.split()[1])
                y_u, f_u = drawn[floor]
                d = unsure_decide_each_label(
                    gold=y_u, f=f_u, minimum=minimum, confidence=CONFIDENCE, min_gold=MIN_GOLD, floor=floor
                )
                decided, at = d.decided, d.at
            row = measured(decided, at / N, right) | {"set": name, "design": design, "distance": distance}
            cells.append(f"{100 * row['median']:16.1f} {100 * row['worst']:5.1f} {100 * row['wrong']:6.2f}")
            rows.append(row)
        print(f"  {minimum:8.3f} {sign * distance:+6.2f} {right:>5} | " + " | ".join(cells))


def measured(decided: np.ndarray, share: np.ndarray, right: str) -> dict:
    """A cell's figures: labels to a decision as a share of N, the median and the worst order; wrong decisions."""
    wrong = (decided != "") & (decided != right)
    return {"side": right, "median": float(np.median(share)), "worst": float(share.max()), "wrong": float(wrong.mean())}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--floors", nargs="*", type=float, default=[0.1, 0.5, 0.9], help="the unsure design's floors")
    parser.add_argument("--orders", type=int, default=500, help="orders per set and threshold")
    parser.add_argument("--only", nargs="*", default=[], help="only the sets whose name holds one of these words")
    parser.add_argument("--distances", nargs="*", type=float, default=list(DISTANCES))
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--no-stratified", action="store_true", help="leave out the stratified design (slow)")
    args = parser.parse_args()
    rng = np.random.default_rng(args.seed)
    sets: list[Set] = [synthetic_jury(rng), synthetic_samples(rng)]
    if (base := datasets_dir()).is_dir():
        sets += [*qags(base, 2), *usr(base, 2), *xsum(base, 2)]  # gold rater 2, as bench/audit_jury.py's default
    else:
        print(f"no datasets at {base} (set ICEWATER_DATASETS_DIR): synthetic sets only", file=sys.stderr)
    rows: list[dict] = []
    started = time.perf_counter()
    chosen = [item for item in sets if not args.only or any(word in item[0] for word in args.only)]
    for item in chosen:
        run(
            item,
            orders=args.orders,
            rng=rng,
            rows=rows,
            distances=tuple(args.distances),
            floors=tuple(args.floors),
            stratified=not args.no_stratified,
        )
    seconds = time.perf_counter() - started
    designs = list(dict.fromkeys(r["design"] for r in rows))
    print(f"\n{len(rows) // len(designs)} set x threshold cells, {args.orders} orders each, {seconds:.0f} s")
    for design in designs:
        mine = [r for r in rows if r["design"] == design]
        worst = max(mine, key=lambda r: r["wrong"])
        print(f"  {design}: wrong decisions at most {100 * worst['wrong']:.2f}% per side ({worst['set']})")
    print("  per side and distance, % of N over the sets: the median of the sets' medians [the largest median];")
    print("  the median of the sets' worst orders [the largest worst]")
    for side in (PASS, FAIL):
        for distance in sorted({r["distance"] for r in rows}):
            cells = []
            for design in designs:
                mine = [r for r in rows if r["design"] == design and r["side"] == side and r["distance"] == distance]
                if not mine:
                    continue
                med = [r["median"] for r in mine]
                worst = [r["worst"] for r in mine]
                cells.append(
                    f"{design} {100 * np.median(med):.1f} [{100 * max(med):.1f}]"
                    f" / {100 * np.median(worst):.1f} [{100 * max(worst):.1f}]"
                )
            print(f"    {side} at {distance:.2f}: " + "; ".join(cells))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
