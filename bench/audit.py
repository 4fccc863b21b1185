"""Audits on the candidate: labels to a release decision and wrong decisions, on real and synthetic sets.

    python bench/audit.py                  # 500 label orders per set and threshold
    python bench/audit.py --orders 200     # a quicker run
    python bench/audit.py --design uniform # the plan design that labels one random order's prefix
    python bench/audit.py --design adaptive --orders 100 --only usr synthetic --distances 0.05 0.10
    python bench/audit.py --design uniform stratified --orders 200   # the designs side by side, per side

Pure statistics, no database: an audit plan's decision rule replayed along --orders random label orders of
each set, with the minimum placed 0.02, 0.05 and 0.10 below and above the set's true pass rate (the share of
gold PASS). --design stratified (the bench's default; plans start uniform since issue 41):
calibration/stats/audit_strata.py, the judge's PASS
outputs and the rest, labeled in one random order and counted in it (what annotators are handed carries no sign
of the judge's verdict, issue 41), the product of the strata's betting tests at every split. --design adaptive:
the same test with each batch of 25 taken from the stratum the labels so far point to, as plans ran before issue
41 (faster where the judge tells passes from fails, but each batch told annotators the judge's verdict).
--design uniform: calibration/stats/audit_stats.py, one random order with the judge as a control variate. All: two
one-sided anytime-valid betting tests without replacement, the exact rule, at least 20 gold items, 95% confidence:
2.5% per side. --only and --distances measure a few cells (bench on a shared machine).

Real sets, read from ../shared/datasets beside the checkout (or ICEWATER_DATASETS_DIR; nothing is copied
into the repository). Gold is the majority of the three raters (what A, B and the adjudicator give under the
app's suggested mapping). No per-item LLM verdicts are published for these sets (the JUDGE-BENCH files hold
only aggregate scores), so the "judge" is one rater, position 0 (on USR always the same person), whose
label is also one of the three votes: its correlation with gold is higher than an outside judge's would be.
XSum factuality has an automatic judge instead (Entailment >= 0.5, kappa 0.07 against the majority: a
judge that adds almost nothing). Binarised as the READMEs do: QAGS yes = PASS (CNN/DM and XSum sentences
pooled); USR Uses Knowledge 1 = PASS, Overall >= 4 = PASS; XSum is_factual yes = PASS.

Synthetic sets: 1,000 outputs, true pass rate 0.70, a judge that passes 75% (it is biased) with
judge-gold correlation 0.3, 0.6 and 0.8.

Prints per set and threshold the median and 90th percentile of the labels to a decision (% of N) and the
wrong-decision rate, then the goals: wrong <= 2.5% per side everywhere; at distance 0.10 a median <= 25% of
N; at 0.05 a median <= 50% of N when the judge-gold correlation is >= 0.6. It also prints the measured
ratio of the median to the fixed-n sample size (not a constant: bench/audit_price.py measures the price).

Per side (issue 38, item 5): for each design, each set and distance, the median labels on the PASS side (the
minimum below the truth) and on the FAIL side (above), and per design the worst over the sets of the worse side,
max(PASS, FAIL). A lead meets either side, so the plans' default design is the one whose worse side costs least
(docs/calibration.md, "Stratified plans"). Several --design values run on the same orders (each design replays
the orders drawn from --seed).
"""

from __future__ import annotations

import argparse
import json
import math
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench.audit_common import (  # noqa: E402
    CONFIDENCE,
    DISTANCES,
    datasets_dir,
    stratified_decisions,
    thresholds,
    xsum_items,
)
from calibration.stats import audit_strata  # noqa: E402
from calibration.stats.audit_forecast import labels_per_decision  # noqa: E402
from calibration.stats.audit_stats import FAIL, MIN_GOLD, PASS, decide_each_label  # noqa: E402


def majority(votes) -> int:
    return int(sum(votes) * 2 > len(votes))


def qags(base: Path):
    gold, judge = [], []
    for name in ("mturk_cnndm.jsonl", "mturk_xsum.jsonl"):
        for line in (base / "qags" / name).read_text().splitlines():
            for sentence in json.loads(line)["summary_sentences"]:
                votes = [int(r["response"] == "yes") for r in sentence["responses"]]
                gold.append(majority(votes))
                judge.append(votes[0])
    yield "qags factual (rater 0)", np.array(gold, float), np.array(judge, float)


def usr(base: Path):
    for corpus, file in (("topical", "usr_topical_chat.json"), ("persona", "usr_percona_chat.json")):
        contexts = json.loads((base / "usr_dialog" / file).read_text())
        responses = [r for c in contexts for r in c["responses"]]
        for criterion, passes in (("uses_knowledge", lambda s: s == 1), ("overall>=4", lambda s: s >= 4)):
            key = "Uses Knowledge" if criterion == "uses_knowledge" else "Overall"
            votes = [[int(passes(s)) for s in r[key]] for r in responses]
            gold = np.array([majority(v) for v in votes], float)
            judge = np.array([v[0] for v in votes], float)
            yield f"usr {corpus} {criterion} (rater 0)", gold, judge


def xsum(base: Path):
    labels, entailment, keys = xsum_items(base)
    gold = np.array([majority(labels[k]) for k in keys], float)
    judge = np.array([float(entailment[k] >= 0.5) for k in keys], float)
    yield "xsum factual (Entailment>=0.5)", gold, judge


def synthetic(N: int = 1000, theta: float = 0.70, judge_rate: float = 0.75, phis: tuple = (0.3, 0.6, 0.8)):
    for phi in phis:
        p11 = theta * judge_rate + phi * math.sqrt(theta * (1 - theta) * judge_rate * (1 - judge_rate))
        n11, n1, nf = round(N * p11), round(N * theta), round(N * judge_rate)
        n10, n01 = n1 - n11, nf - n11
        n00 = N - n11 - n10 - n01
        gold = np.r_[np.ones(n11), np.ones(n10), np.zeros(n01), np.zeros(n00)]
        judge = np.r_[np.ones(n11), np.zeros(n10), np.ones(n01), np.zeros(n00)]
        yield f"synthetic phi={phi}", gold, judge


def run(
    name: str,
    gold: np.ndarray,
    judge: np.ndarray,
    *,
    orders: int,
    rng,
    rows: list[dict],
    design: str = "stratified",
    distances: tuple[float, ...] = DISTANCES,
) -> None:
    N = gold.size
    theta = float(gold.mean())
    phi = float(np.corrcoef(gold, judge)[0, 1])
    perm = np.argsort(rng.random((orders, N)), axis=1)
    ys, fs = gold[perm], judge[perm]
    # Each stratum's order is the uniform order restricted to it, as a plan's is.
    strata = audit_strata.strata_of(judge)[perm]
    strata_gold = tuple(ys[strata == h].reshape(orders, -1) for h in (0, 1))
    print(f"\n{name}: N = {N}, true pass rate {theta:.3f}, judge pass rate {judge.mean():.3f}, phi {phi:.2f}")
    print(
        f"  {'minimum':>8} {'distance':>9} {'right':>5} {'median %N':>10} {'p90 %N':>8} {'max %N':>7} {'wrong %':>8}"
        f" {'x fixed-n':>9}"
    )
    for distance, sign, minimum, right in thresholds(theta, distances):
        if design != "uniform":
            path = strata if design == "stratified" else None
            decided, at = stratified_decisions(strata_gold, minimum, path)  # type: ignore[arg-type]
        else:
            d = decide_each_label(gold=ys, f=fs, minimum=minimum, confidence=CONFIDENCE, min_gold=MIN_GOLD)
            decided, at = d.decided, d.at
        labels = at.astype(float)
        median, p90 = float(np.median(labels)), float(np.quantile(labels, 0.9))
        wrong = float(((decided != "") & (decided != right)).mean())
        fixed = labels_per_decision(phi=phi, pass_rate=theta, margin=distance, N=N).fixed_n
        worst = float(labels.max())
        rows.append(
            {"set": name, "phi": phi, "distance": distance, "median": median / N, "p90": p90 / N, "wrong": wrong}
            | {"ratio": median / fixed, "max": worst / N, "design": design, "side": right, "N": N, "labels": median}
        )
        print(
            f"  {minimum:8.3f} {sign * distance:+9.2f} {right:>5} {100 * median / N:10.1f} {100 * p90 / N:8.1f}"
            f" {100 * worst / N:7.1f} {100 * wrong:8.2f} {median / fixed:9.2f}"
        )


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--orders", type=int, default=500, help="random label orders per set and threshold")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument(
        "--design",
        nargs="+",
        choices=["stratified", "adaptive", "uniform"],
        default=["stratified"],
        help="one or more designs, each on the same orders",
    )
    parser.add_argument("--only", nargs="*", default=[], help="only the sets whose name holds one of these words")
    parser.add_argument("--distances", nargs="*", type=float, default=list(DISTANCES))
    args = parser.parse_args()
    base = datasets_dir()
    if not base.is_dir():
        print(f"no datasets at {base}: set ICEWATER_DATASETS_DIR", file=sys.stderr)
        return 1
    every: list[dict] = []
    for design in args.design:
        print(f"\n=== {design} design")
        rows = measure(
            base, design=design, orders=args.orders, seed=args.seed, only=args.only, distances=args.distances
        )
        goals(rows, design=design, orders=args.orders)
        every += rows
    per_side(every)
    return 0


def measure(base: Path, *, design: str, orders: int, seed: int, only: list[str], distances: list[float]) -> list[dict]:
    """Every set's cells under one design; the same seed gives every design the same orders."""
    rng = np.random.default_rng(seed)
    rows: list[dict] = []
    started = time.perf_counter()
    for source in (qags(base), usr(base), xsum(base), synthetic()):
        for name, gold, judge in source:
            if only and not any(word in name for word in only):
                continue
            run(name, gold, judge, orders=orders, rng=rng, rows=rows, design=design, distances=tuple(distances))
    for row in rows:
        row["seconds"] = time.perf_counter() - started
    return rows


def goals(rows: list[dict], *, design: str, orders: int) -> None:
    if not rows:
        return
    seconds = rows[0].get("seconds", 0.0)

    worst = max(r["wrong"] for r in rows)
    at_10 = [r for r in rows if r["distance"] == 0.10] or rows
    at_05 = [r for r in rows if r["distance"] == 0.05 and r["phi"] >= 0.6]
    ratios = [r["ratio"] for r in rows if r["distance"] >= 0.05]
    print(f"\n{design} design: {len(rows)} set x threshold cells, {orders} orders each, {seconds:.0f} s")
    targets = [
        ("wrong decisions <= 2.5% per side everywhere", worst <= 0.025, f"worst {100 * worst:.2f}%"),
        (
            "distance 0.10: median <= 25% of N",
            all(r["median"] <= 0.25 for r in at_10),
            f"worst {100 * max(r['median'] for r in at_10):.1f}% ({max(at_10, key=lambda r: r['median'])['set']})",
        ),
        (
            "distance 0.05, phi >= 0.6: median <= 50% of N",
            all(r["median"] <= 0.50 for r in at_05),
            (
                f"worst {100 * max(r['median'] for r in at_05):.1f}% ({max(at_05, key=lambda r: r['median'])['set']})"
                if at_05
                else "no such set"
            ),
        ),
    ]
    for goal, met, figure in targets:
        print(f"  {'met ' if met else 'MISSED'}  {goal}: {figure}")
    print(
        f"  median / fixed-n sample size at distances 0.05 and 0.10: median {np.median(ratios):.2f},"
        f" range {min(ratios):.2f}-{max(ratios):.2f} (no constant ratio: the price's model is measured by"
        " bench/audit_price.py)"
    )


def side_table(rows: list[dict]) -> dict[str, dict[tuple[str, float], dict[str, float]]]:
    """Per design, per (set, distance): the median labels (% of N) on each side."""
    table: dict[str, dict[tuple[str, float], dict[str, float]]] = {}
    for r in rows:
        table.setdefault(r["design"], {}).setdefault((r["set"], r["distance"]), {})[r["side"]] = r["median"]
    return table


def worst_sides(rows: list[dict]) -> dict[str, dict[float, tuple[float, str]]]:
    """Per design and distance, the worst over the sets of the worse side's median, max(PASS, FAIL) (% of N), and
    its set: the figure the default design is chosen on (issue 38, item 5). Cells with one side only (a minimum
    outside (0, 1)) count that side."""
    worst: dict[str, dict[float, tuple[float, str]]] = {}
    for design, cells in side_table(rows).items():
        for (name, distance), sides in cells.items():
            worse = max(sides.values())
            if worse > worst.setdefault(design, {}).get(distance, (-1.0, ""))[0]:
                worst[design][distance] = (worse, name)
    return worst


def per_side(rows: list[dict]) -> None:
    table = side_table(rows)
    designs = list(table)
    print("\nper side: median labels to a decision, % of N, PASS / FAIL (the worse side starred)")
    print(f"  {'set':<40} {'dist':>5} " + " ".join(f"{d:>17}" for d in designs))
    for key in table[designs[0]]:
        cells = []
        for design in designs:
            sides = table[design].get(key, {})
            worse = max(sides, key=lambda s: sides[s]) if sides else ""
            said = (
                f"{100 * sides[s]:5.1f}{'*' if s == worse else ' '}" if s in sides else "    - " for s in (PASS, FAIL)
            )
            cells.append(" / ".join(said))
        print(f"  {key[0]:<40} {key[1]:5.2f} " + " ".join(f"{c:>17}" for c in cells))
    if len(designs) > 1:
        cells = [key for key in table[designs[0]] if all(key in table[d] for d in designs)]
        worse = {d: {key: max(table[d][key].values()) for key in cells} for d in designs}
        for d in designs:
            least = sum(worse[d][key] <= min(worse[o][key] for o in designs) for key in cells)
            gap = max(worse[d][key] - min(worse[o][key] for o in designs) for key in cells)
            print(f"  {d}: the cheapest worse side in {least} of {len(cells)} cells (ties count for each), at most"
                  f" {100 * gap:.1f} points of N above the cheapest")  # fmt: skip
    print("  worst over the sets of max(PASS, FAIL), % of N:")
    worst = worst_sides(rows)
    for distance in sorted({r["distance"] for r in rows}):
        said = ", ".join(
            f"{design} {100 * worst[design][distance][0]:.1f} ({worst[design][distance][1]})"
            for design in designs
            if distance in worst[design]
        )
        print(f"    distance {distance:.2f}: {said}")


if __name__ == "__main__":
    raise SystemExit(main())
