"""Audits on the candidate: labels to a release decision and wrong decisions, on real and synthetic sets.

    python bench/audit.py                  # 500 label orders per set and threshold
    python bench/audit.py --orders 200     # a quicker run
    python bench/audit.py --design uniform # the plan design that labels one random order's prefix
    python bench/audit.py --design adaptive --orders 100 --only usr synthetic --distances 0.05 0.10
    python bench/audit.py --design uniform stratified --orders 200   # the designs side by side, per side
    python bench/audit.py --design uniform jury unsure --orders 100 --distances 0.05 0.10 --large   # issue 38

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

Issue 38's designs: --design jury, bench/audit_jury.py's predictor (calibration/stats/audit_predictor.py: every
signal of the set as control variates, slopes fitted on the labels before each draw) on the uniform orders; on
bench/audit.py's own sets its one signal is the judge, so it equals the uniform design there. --design unsure,
bench/audit_unsure.py's design (calibration/stats/audit_unsure.py at its floor FLOOR, drawing by the score's
uncertainty: the mean of the raters or judges, or the vote share), on orders it draws itself from a stream of their
own (on one-bit sets its draw is uniform, on other orders than the uniform design's). Asking for either adds
bench/audit_jury.py's sets after bench/audit.py's own, for every design asked for: the synthetic jury of three
judges of correlation 0.3, 0.5 and 0.7 with gold, five samples of one judge, and the public sets' raters as a
jury (gold rater 2, the judges raters 0 and 1, on XSum also the Entailment score; the one-bit judge rater 0).
The goals section prints, beside the older goals, issue 38's: wrong <= 2.5% on each side in every cell; at
distance 0.10 a median <= 15% of N on every set; at 0.05 where the design's predictor has phi >= 0.6 (the jury's
R, the unsure score's phi, else the judge's) a median <= 35% of N; each met or missed and by how many points.
--large adds a 20,000-output synthetic jury at distance 0.05, each design's median labels beside uniform's.

What any test could reach, per cell: "oracle %N", the median of the growth-optimal betting test (told the whole
set's least-squares predictor and the outputs left before each draw, it bets Kelly against them:
audit_common.oracle_labels), and "floor %N", the fixed-n size where the most powerful test has a power of one half,
below which no valid test's median lies (Neyman-Pearson). Under issue 38's goals, on how many sets each is over the
goal: a goal over the floor cannot be met by a better test, only by a better predictor.
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

from bench import audit_jury, audit_unsure  # noqa: E402
from bench.audit_common import (  # noqa: E402
    CONFIDENCE,
    DISTANCES,
    datasets_dir,
    least_squares_score,
    oracle_labels,
    stratified_decisions,
    thresholds,
    xsum_items,
)
from calibration.stats import audit_strata  # noqa: E402
from calibration.stats.audit_forecast import labels_per_decision  # noqa: E402
from calibration.stats.audit_predictor import jury_decide_each_label  # noqa: E402
from calibration.stats.audit_stats import FAIL, MIN_GOLD, PASS, decide_each_label  # noqa: E402
from calibration.stats.audit_unsure import FLOOR, simulate_orders, unsure_decide_each_label  # noqa: E402

DESIGNS = ("stratified", "adaptive", "uniform", "jury", "unsure")
# A set as the designs read it: its name, gold (N,), the one-bit judge (N,), the jury's signals (N, K) and their
# names (bench/audit_jury.py's Set). bench/audit.py's own sets have the judge as their only signal.
Set = audit_jury.Set


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
    item: Set,
    *,
    orders: int,
    rng,
    rows: list[dict],
    design: str = "stratified",
    distances: tuple[float, ...] = DISTANCES,
    seed: int = 0,
) -> None:
    name, gold, judge, signals, names = item
    N = gold.size
    theta = float(gold.mean())
    phi = float(np.corrcoef(gold, judge)[0, 1])
    perm = np.argsort(rng.random((orders, N)), axis=1)
    ys, fs = gold[perm], judge[perm]
    # Each stratum's order is the uniform order restricted to it, as a plan's is.
    strata = audit_strata.strata_of(judge)[perm]
    strata_gold = tuple(ys[strata == h].reshape(orders, -1) for h in (0, 1))
    if design == "jury":
        # The predictor's phi is the jury's R: the correlation with gold of its least-squares fit on the whole set.
        phi = audit_jury.fit_r(gold, signals)
    elif design == "unsure":
        score = audit_unsure.score_of(item) if len(names) > 1 else judge
        phi = float(np.corrcoef(gold, score)[0, 1])
        # The unsure design draws its own orders (not uniform ones): from a stream of their own, so that every
        # other set's uniform orders stay those of the other designs.
        stream = np.random.default_rng([seed, N, orders, 38])
        drawn = simulate_orders(gold=gold, scores=score, floor=FLOOR, orders=orders, rng=stream)
    print(f"\n{name}: N = {N}, true pass rate {theta:.3f}, judge pass rate {judge.mean():.3f}, phi {phi:.2f}")
    if design in ("jury", "unsure") and len(names) > 1:
        each = ", ".join(f"{n} {float(np.corrcoef(gold, signals[:, k])[0, 1]):.2f}" for k, n in enumerate(names))
        said = "jury R" if design == "jury" else f"score (the raters' mean) phi, floor {FLOOR:g}"
        print(f"  signals' phi with gold: {each}; phi above is the {said}")
    print(
        f"  {'minimum':>8} {'distance':>9} {'right':>5} {'median %N':>10} {'p90 %N':>8} {'max %N':>7} {'wrong %':>8}"
        f" {'x fixed-n':>9} {'oracle %N':>9} {'floor %N':>8}"
    )
    # The growth-optimal test's predictor: the whole set's least-squares fit on what the design reads.
    best = least_squares_score(gold, signals if design in ("jury", "unsure") else judge[:, None])[perm]
    for distance, sign, minimum, right in thresholds(theta, distances):
        rule = {"minimum": minimum, "confidence": CONFIDENCE, "min_gold": MIN_GOLD}
        if design in ("stratified", "adaptive"):
            path = strata if design == "stratified" else None
            decided, at = stratified_decisions(strata_gold, minimum, path)  # type: ignore[arg-type]
        elif design == "jury":
            d = jury_decide_each_label(gold=ys, f=signals[perm], **rule)
            decided, at = d.decided, d.at
        elif design == "unsure":
            d = unsure_decide_each_label(gold=drawn[0], f=drawn[1], floor=FLOOR, **rule)
            decided, at = d.decided, d.at
        else:
            d = decide_each_label(gold=ys, f=fs, **rule)
            decided, at = d.decided, d.at
        labels = at.astype(float)
        median, p90 = float(np.median(labels)), float(np.quantile(labels, 0.9))
        wrong = float(((decided != "") & (decided != right)).mean())
        fixed = labels_per_decision(phi=min(phi, 0.999), pass_rate=theta, margin=distance, N=N).fixed_n
        worst = float(labels.max())
        oracle = float(np.median(oracle_labels(ys, best, minimum=minimum, right=right)))
        rows.append(
            {"set": name, "phi": phi, "distance": distance, "median": median / N, "p90": p90 / N, "wrong": wrong}
            | {"ratio": median / fixed, "max": worst / N, "design": design, "side": right, "N": N, "labels": median}
            | {"oracle": oracle / N, "floor": fixed / N}
        )
        print(
            f"  {minimum:8.3f} {sign * distance:+9.2f} {right:>5} {100 * median / N:10.1f} {100 * p90 / N:8.1f}"
            f" {100 * worst / N:7.1f} {100 * wrong:8.2f} {median / fixed:9.2f} {100 * oracle / N:9.1f}"
            f" {100 * fixed / N:8.1f}"
        )


def main(argv: list[str] | None = None) -> int:
    args = parser().parse_args(argv)
    base = datasets_dir()
    if not base.is_dir():
        print(f"no datasets at {base}: set ICEWATER_DATASETS_DIR", file=sys.stderr)
        return 1
    # The jury's sets join every design's run when a jury-reading design is asked for, so that all designs are
    # compared on the same sets and orders (and the one-bit designs' output without them stays as it was).
    with_jury = bool({"jury", "unsure"} & set(args.design))
    common = {"orders": args.orders, "seed": args.seed, "only": args.only, "distances": args.distances}
    every: list[dict] = []
    for design in args.design:
        print(f"\n=== {design} design")
        rows = measure(base, design=design, with_jury=with_jury, **common)
        goals(rows, design=design, orders=args.orders)
        every += rows
    per_side(every)
    if args.large:
        large(args.design, seed=args.seed, orders=args.large_orders)
    return 0


def parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--orders", type=int, default=500, help="random label orders per set and threshold")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument(
        "--design",
        nargs="+",
        choices=DESIGNS,
        default=["stratified"],
        help="one or more designs, each on the same orders",
    )
    parser.add_argument("--only", nargs="*", default=[], help="only the sets whose name holds one of these words")
    parser.add_argument("--distances", nargs="*", type=float, default=list(DISTANCES))
    parser.add_argument(
        "--large", action="store_true", help="also a 20,000-output synthetic jury at distance 0.05, beside uniform"
    )
    parser.add_argument("--large-orders", type=int, default=100, help="orders of the 20,000-output candidate")
    return parser


def jury_sets(base: Path, seed: int) -> list[Set]:
    """bench/audit_jury.py's sets (issue 38's goals): the synthetic jury of three judges (phi 0.3, 0.5, 0.7), five
    samples of one judge, and the public sets' raters as a jury (gold rater 2, the judges raters 0 and 1, on XSum
    also the Entailment score; one bit rater 0). From a stream of their own, so the same for every design."""
    rng = np.random.default_rng([seed, 38])
    return [
        audit_jury.synthetic_jury(rng),
        audit_jury.synthetic_samples(rng),
        *audit_jury.qags(base, 2),
        *audit_jury.usr(base, 2),
        *audit_jury.xsum(base, 2),
    ]


def measure(
    base: Path,
    *,
    design: str,
    orders: int,
    seed: int,
    only: list[str],
    distances: list[float],
    with_jury: bool = False,
) -> list[dict]:
    """Every set's cells under one design; the same seed gives every design the same orders (the unsure design
    draws its own). with_jury: bench/audit_jury.py's sets after bench/audit.py's own."""
    rng = np.random.default_rng(seed)
    rows: list[dict] = []
    started = time.perf_counter()
    sets: list[Set] = [
        (name, gold, judge, judge[:, None], ("judge",))
        for source in (qags(base), usr(base), xsum(base), synthetic())
        for name, gold, judge in source
    ]
    if with_jury:
        sets += jury_sets(base, seed)
    for item in sets:
        if only and not any(word in item[0] for word in only):
            continue
        run(item, orders=orders, rng=rng, rows=rows, design=design, distances=tuple(distances), seed=seed)
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
    print("  issue 38's goals:")
    for goal, limit, figure in issue_38_goals(rows):
        print(f"  {'met ' if figure <= limit else 'MISSED'}  {goal}: " + spare(figure, limit))
    for line in reachable(rows):
        print(f"        {line}")


def reachable(rows: list[dict]) -> list[str]:
    """What the median goals ask against what any test could give on these sets, per goal: the floor (no valid test,
    sequential or not, has a median below the fixed-n size at which the most powerful test has a power of one half;
    audit_common.oracle_labels says why) and the growth-optimal betting test (told the set: its predictor and the
    outputs left before each draw). A goal below a set's floor cannot be met there by a better test, only by a better
    predictor."""
    lines = []
    for distance, limit, phi in ((0.10, 0.15, -1.0), (0.05, 0.35, 0.6)):
        mine = [r for r in rows if r["distance"] == distance and r["phi"] >= phi]
        if not mine:
            continue
        floor = max(mine, key=lambda r: r["floor"])
        oracle = max(mine, key=lambda r: r["oracle"])
        below = {r["set"] for r in mine if r["floor"] > limit}
        beyond = {r["set"] for r in mine if r["oracle"] > limit}
        sets = len({r["set"] for r in mine})
        lines.append(
            f"distance {distance:.2f}: the growth-optimal test's worst median {100 * oracle['oracle']:.1f}% of N"
            f" ({oracle['set']}, {oracle['side']}), over {100 * limit:.0f}% on {len(beyond)} of {sets} sets;"
            f" the floor of any valid test {100 * floor['floor']:.1f}% ({floor['set']}), over on {len(below)}"
        )
    return lines


def issue_38_goals(rows: list[dict]) -> list[tuple[str, float, float]]:
    """(goal, limit, the worst figure) for issue 38's goals: wrong decisions <= 2.5% on each side in every cell;
    at distance 0.10 a median <= 15% of N on every set; at 0.05, where the design's predictor has phi >= 0.6
    (the jury's R, the unsure design's score's phi, else the judge's), a median <= 35% of N."""
    goals = []
    for side in (PASS, FAIL):
        mine = [r for r in rows if r["side"] == side]
        if mine:
            worst = max(mine, key=lambda r: r["wrong"])
            where = f" ({worst['set']})" if worst["wrong"] > 0 else ""
            goals.append((f"wrong decisions <= 2.5% on the {side} side in every cell{where}", 0.025, worst["wrong"]))
    for distance, limit, phi in ((0.10, 0.15, -1.0), (0.05, 0.35, 0.6)):
        mine = [r for r in rows if r["distance"] == distance and r["phi"] >= phi]
        if mine:
            worst = max(mine, key=lambda r: r["median"])
            sets = {r["set"] for r in mine}
            over = {r["set"] for r in mine if r["median"] > limit}
            where = "every set" if phi < 0 else f"phi >= {phi}"
            where += f": median <= {100 * limit:.0f}% of N ({len(over)} of {len(sets)} sets over; worst"
            where += f" {worst['set']}, {worst['side']})"
            goals.append(
                (
                    f"distance {distance:.2f}, {where}",
                    limit,
                    worst["median"],
                )
            )
    return goals


def spare(figure: float, limit: float) -> str:
    """The worst figure and how far it is from its limit, in points of N (or of decisions)."""
    said = "to spare" if figure <= limit else "over"
    return f"worst {100 * figure:.2f}%, {100 * abs(limit - figure):.2f} points {said}"


def large(designs: list[str], *, seed: int, orders: int) -> None:
    """Issue 38: the median labels to a decision for a 20,000-output candidate (the synthetic jury of three judges)
    at distance 0.05, per side, for each design beside today's (uniform, the judge phi 0.7 as its one bit)."""
    item = audit_jury.synthetic_jury(np.random.default_rng([seed, 20_000]), N=20_000)
    medians: dict[str, dict[str, float]] = {}
    for design in dict.fromkeys(["uniform", *designs]):
        rows: list[dict] = []
        print(f"\n=== {design} design, 20,000 outputs")
        run(
            item, orders=orders, rng=np.random.default_rng(seed), rows=rows, design=design, distances=(0.05,), seed=seed
        )
        medians[design] = {r["side"]: r["labels"] for r in rows}
    print(f"\n20,000-output candidate ({item[0]}), distance 0.05, median labels to a decision ({orders} orders):")
    for side in (PASS, FAIL):
        said = ", ".join(f"{d} {medians[d][side]:.0f}" for d in medians if side in medians[d])
        print(f"  {side} side: {said} (today's design: uniform)")


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
