"""Audits with a jury predictor (calibration/stats/audit_predictor.py) beside today's one-bit audit: labels to a
decision per side and wrong decisions, on synthetic known-truth sets and on the public sets' raters.

    python bench/audit_jury.py                       # 500 label orders per set and threshold
    python bench/audit_jury.py --orders 200 --only usr synthetic
    python bench/audit_jury.py --large               # also a 20,000-output candidate at distance 0.05 (100 orders)
    python bench/audit_jury.py --gold-rater 0        # the public sets with rater 0 as gold, raters 1 and 2 the jury

Both designs are the uniform plan's (one random order, two one-sided anytime-valid betting tests without
replacement, the exact rule, at least 20 gold items, 95% confidence: 2.5% per side), replayed along the same
orders. "one bit": today's predictor, one judge's PASS/FAIL. "best": the jury's best member alone (by its phi
on the whole set, which a lead would read from the calibration instead). "jury": every signal of the set as
control variates, slopes fitted on the labels before each draw. All three run
audit_predictor.jury_decide_each_label, which with one signal is audit_stats.decide_each_label to 1e-9
(tests/calibration/stats/test_audit_predictor.py).

Sets:
- synthetic jury: 1,000 outputs, theta 0.70, three judges independent given gold with correlations 0.3, 0.5 and
  0.7 (each passing 70%). One bit: the best judge (0.7).
- synthetic samples: 1,000 outputs, theta 0.70, one judge config sampled five times, each output with its own
  chance of PASS (Beta(4, 1.5) where gold is PASS, Beta(1.5, 3) where FAIL). One bit: the majority of the
  five samples (what the judge's pages show); jury: the vote share.
- the public sets in ../shared/datasets (or ICEWATER_DATASETS_DIR), binarised as bench/audit.py does. Each item
  has three raters; no per-item LLM verdicts are published, so the raters are the judges: gold is rater 2
  (--gold-rater), one bit the first of the other two, the jury both (on XSum also the Entailment score, a number
  in [0, 1]). A rater
  is a stronger judge than most LLMs, and its errors are independent of gold's rater, so the figures say what a
  jury of good, independent judges saves, not what a jury of LLMs from one family would.

Prints per set its signals' phi with gold and the jury's R (the correlation with gold of the least-squares fit
on the whole set: the variance the tests pay falls with 1 - R^2); per threshold, for each design, the median and
worst (over the orders) labels to a decision (% of N) and the wrong-decision rate; then, per side (PASS: the
minimum below the truth; FAIL: above) and distance, what the jury saved against one bit and against its best
member, the median over the sets and the range.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench.audit_common import CONFIDENCE, DISTANCES, datasets_dir, thresholds, xsum_items  # noqa: E402
from calibration.stats.audit_predictor import jury_decide_each_label  # noqa: E402
from calibration.stats.audit_stats import FAIL, MIN_GOLD, PASS  # noqa: E402

# A set: its name, gold (N,), the one-bit judge (N,), the jury's signals (N, K) and their names.
Set = tuple[str, np.ndarray, np.ndarray, np.ndarray, tuple[str, ...]]


def raters(name: str, votes: np.ndarray, gold: int, extra: dict[str, np.ndarray] | None = None) -> Set:
    """Gold one rater (2 by default), one bit the first of the other two, the jury both (and any extra signals)."""
    extra = extra or {}
    first, second = (r for r in range(3) if r != gold)
    signals = np.column_stack([votes[:, first], votes[:, second], *extra.values()])
    names = (f"rater {first}", f"rater {second}", *extra)
    return f"{name} (gold rater {gold})", votes[:, gold], votes[:, first], signals, names


def qags(base: Path, gold: int) -> Iterator[Set]:
    votes = []
    for name in ("mturk_cnndm.jsonl", "mturk_xsum.jsonl"):
        for line in (base / "qags" / name).read_text().splitlines():
            for sentence in json.loads(line)["summary_sentences"]:
                votes.append([int(r["response"] == "yes") for r in sentence["responses"]][:3])
    yield raters("qags factual", np.array(votes, float), gold)


def usr(base: Path, gold: int) -> Iterator[Set]:
    for corpus, file in (("topical", "usr_topical_chat.json"), ("persona", "usr_percona_chat.json")):
        responses = [r for c in json.loads((base / "usr_dialog" / file).read_text()) for r in c["responses"]]
        for criterion, key, passes in (("uses_knowledge", "Uses Knowledge", 1), ("overall>=4", "Overall", 4)):
            votes = np.array([[int(s >= passes) for s in r[key]] for r in responses], float)
            yield raters(f"usr {corpus} {criterion}", votes, gold)


def xsum(base: Path, gold: int) -> Iterator[Set]:
    labels, entailment, keys = xsum_items(base)
    votes = np.array([labels[k] for k in keys], float)
    yield raters("xsum factual", votes, gold, {"entailment": np.array([entailment[k] for k in keys])})


def synthetic_jury(rng: np.random.Generator, N: int = 1000, theta: float = 0.70) -> Set:
    y = np.r_[np.ones(round(N * theta)), np.zeros(N - round(N * theta))]
    phis = (0.3, 0.5, 0.7)
    judges = np.column_stack(
        [(rng.random(N) < np.where(y == 1, theta + p * (1 - theta), theta * (1 - p))).astype(float) for p in phis]
    )
    return f"synthetic jury phi 0.3/0.5/0.7 (N={N})", y, judges[:, 2], judges, tuple(f"phi {p}" for p in phis)


def synthetic_samples(rng: np.random.Generator, N: int = 1000, theta: float = 0.70) -> Set:
    y = np.r_[np.ones(round(N * theta)), np.zeros(N - round(N * theta))]
    chance = np.where(y == 1, rng.beta(4, 1.5, N), rng.beta(1.5, 3, N))
    share = (rng.random((N, 5)) < chance[:, None]).mean(axis=1)
    return "synthetic 5 samples of one judge", y, (share > 0.5).astype(float), share[:, None], ("vote share",)


def fit_r(y: np.ndarray, f: np.ndarray) -> float:
    X = np.c_[np.ones(y.size), f]
    fitted = X @ np.linalg.lstsq(X, y, rcond=None)[0]
    return float(np.corrcoef(fitted, y)[0, 1])


def run(item: Set, *, orders: int, rng: np.random.Generator, rows: list[dict], distances: tuple[float, ...]) -> None:
    name, gold, judge, signals, names = item
    N = gold.size
    theta = float(gold.mean())
    perm = np.argsort(rng.random((orders, N)), axis=1)
    ys, fs = gold[perm], signals[perm]
    phis = [float(np.corrcoef(gold, signals[:, k])[0, 1]) for k in range(len(names))]
    # The design to beat is not only today's judge but the jury's best member alone (known here from the whole
    # set's gold; a lead would pick it from the calibration's phi).
    best = int(np.argmax(phis))
    designs = {"one bit": judge[perm][:, :, None], f"best ({names[best]})": fs[:, :, best : best + 1], "jury": fs}
    each = ", ".join(f"{n} {phi:.2f}" for n, phi in zip(names, phis, strict=True))
    print(
        f"\n{name}: N = {N}, theta {theta:.3f}; one bit phi {fit_r(gold, judge):.2f}; jury R {fit_r(gold, signals):.2f}"
    )
    print(f"  signals' phi with gold: {each}")
    print(f"  {'minimum':>8} {'dist':>6} {'right':>5} | " + " | ".join(f"{d[:20]:>20} worst wrong%" for d in designs))
    for distance, sign, minimum, right in thresholds(theta, distances):
        cells = []
        for design, f in designs.items():
            d = jury_decide_each_label(gold=ys, f=f, minimum=minimum, confidence=CONFIDENCE, min_gold=MIN_GOLD)
            at = d.at.astype(float) / N
            wrong = float(((d.decided != "") & (d.decided != right)).mean())
            median, worst = float(np.median(at)), float(at.max())
            cells.append(f"{100 * median:20.1f} {100 * worst:5.1f} {100 * wrong:6.2f}")
            rows.append(
                {"set": name, "design": design.split(" (")[0], "side": right, "distance": distance, "N": N}
                | {"median": median, "worst": worst, "wrong": wrong}
            )
        print(f"  {minimum:8.3f} {sign * distance:+6.2f} {right:>5} | " + " | ".join(cells))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--orders", type=int, default=500)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--only", nargs="*", default=[], help="only the sets whose name holds one of these words")
    parser.add_argument("--distances", nargs="*", type=float, default=list(DISTANCES))
    parser.add_argument("--gold-rater", type=int, choices=(0, 1, 2), default=2, help="the public sets' gold rater")
    parser.add_argument("--large", action="store_true", help="also a 20,000-output synthetic jury at 0.05")
    args = parser.parse_args()
    base = datasets_dir()
    rng = np.random.default_rng(args.seed)
    sets: list[Set] = [synthetic_jury(rng), synthetic_samples(rng)]
    if base.is_dir():
        sets += [*qags(base, args.gold_rater), *usr(base, args.gold_rater), *xsum(base, args.gold_rater)]
    else:
        print(f"no datasets at {base} (set ICEWATER_DATASETS_DIR): synthetic sets only", file=sys.stderr)
    rows: list[dict] = []
    started = time.perf_counter()
    for item in sets:
        if args.only and not any(word in item[0] for word in args.only):
            continue
        run(item, orders=args.orders, rng=rng, rows=rows, distances=tuple(args.distances))
    if args.large:
        large = synthetic_jury(rng, N=20_000)
        run(large, orders=100, rng=rng, rows=rows, distances=(0.05,))
        for side in (PASS, FAIL):
            cells = {r["design"]: r for r in rows if r["set"] == large[0] and r["side"] == side}
            print(
                f"  20,000 outputs, distance 0.05, {side} side: median labels one bit"
                f" {cells['one bit']['median'] * 20_000:.0f}, jury {cells['jury']['median'] * 20_000:.0f}"
            )
    seconds = time.perf_counter() - started
    print(f"\n{len(rows) // 3} set x threshold cells, {args.orders} orders each, {seconds:.0f} s")
    for design in ("one bit", "best", "jury"):
        mine = [r for r in rows if r["design"] == design]
        worst = max(mine, key=lambda r: r["wrong"])
        print(f"  {design}: wrong decisions at most {100 * worst['wrong']:.2f}% per side ({worst['set']})")
    print("  the jury's median against one bit / the best member alone, per side (% of N, the median over sets):")
    for side in (PASS, FAIL):
        for distance in sorted({r["distance"] for r in rows}):
            cell = {
                (r["set"], r["design"]): r["median"] for r in rows if r["side"] == side and r["distance"] == distance
            }
            sets = {s for s, _ in cell}
            saved = [cell[(s, "one bit")] - cell[(s, "jury")] for s in sets]
            over_best = [cell[(s, "best")] - cell[(s, "jury")] for s in sets]
            print(
                f"    {side} side at {distance:.2f}: saved {100 * np.median(saved):.1f}% of N"
                f" ({100 * min(saved):+.1f} to {100 * max(saved):+.1f}); against the best member"
                f" {100 * np.median(over_best):.1f}% ({100 * min(over_best):+.1f} to {100 * max(over_best):+.1f})"
            )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
