"""The price of gating against the labels audits take: predicted and measured median labels to a decision, per set
and side, for the default design (the uniform plan), on sets the price was not fitted on.

    python bench/audit_price.py                 # the held-out sets: bench/audit.py's real and synthetic sets
    python bench/audit_price.py --orders 200    # fewer label orders per cell
    python bench/audit_price.py --fit           # refit the price's constants on the training grid (a few minutes)
    python bench/audit_price.py --large         # also 20,000-output candidates, past the grid's largest N
    python bench/audit_price.py --only-jury     # only the juries (below)

The price (calibration.stats.audit_forecast.labels_per_decision) has three constants, PRICE_SCALE, PRICE_START and
PRICE_TRUTH_WEIGHT. --fit measures the median labels to a decision of the uniform design (audit_stats.
decide_each_label: two one-sided anytime-valid betting tests without replacement, the exact rule, at least 20 gold
items, 95% confidence) on a training grid of synthetic known-truth candidates: N 300, 1,200 and 3,000, true pass
rates 0.50, 0.62, 0.85, 0.93 and 0.97, a judge passing 3 points more than gold (at most 0.99) with correlation 0,
0.4, 0.7 and 0.9 (where such a judge exists), the minimum 0.05 and 0.10 below and above the truth (inside (0, 1));
and fits the three by least squares on the log of price over measured. None of the grid's candidates is a set this
bench reports (bench/audit.py's synthetic sets have N 1,000, a pass rate of 0.70 and a judge passing 75%), so the
constants are not fitted on the held-out sets. The model's form was chosen among four (docs/calibration.md, "The
price of gating"), and that choice did look at the held-out errors.

Held out: bench/audit.py's sets (QAGS, USR's four, XSum with the Entailment judge, the three synthetic ones), their
phi and pass rate read on the whole set (what a calibration would give), the minimum at distances 0.05 and 0.10
(the margins the report quotes) on each side. Prints per set and side the measured median, the price and its
error, and the price before issue 38 (2.0 x the fixed-n sample size) beside it; then the worst and median error.
A binary judge and binary gold on a uniformly random order are described by N and the four cells alone, so a
synthetic candidate with a real set's cells is that set, for this test.

Juries (issue 38): a uniform audit with extra judge configs reads their vote shares beside its judge's, and the
report prices it at the jury's cross-validated R with gold (calibration/stats/jury_fit.py) where it prices one judge
at phi. Checked on bench/audit_jury.py's sets (the synthetic jury of three judges at 0.3/0.5/0.7, one judge's vote
share over five samples, and the public sets' raters as a jury), the measured median that of
audit_predictor.jury_decide_each_label along the same kind of orders, R read on the whole set as phi is. None of
them was used to fit the constants.
"""

from __future__ import annotations

import argparse
import math
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench.audit import CONFIDENCE, datasets_dir, qags, synthetic, usr, xsum  # noqa: E402
from calibration.stats import audit_forecast  # noqa: E402
from calibration.stats.audit_forecast import labels_per_decision  # noqa: E402
from calibration.stats.audit_predictor import jury_decide_each_label  # noqa: E402
from calibration.stats.audit_stats import FAIL, MIN_GOLD, PASS, decide_each_label  # noqa: E402
from calibration.stats.jury_fit import cross_validated_r  # noqa: E402

MARGINS = (0.05, 0.10)
# The goal (issue 38, item 5): the price within 25% of the measured median, on every held-out set and side.
GOAL = 0.25


def population(N: int, theta: float, judge_rate: float, phi: float) -> tuple[np.ndarray, np.ndarray] | None:
    """A candidate of N outputs with gold pass rate theta and a judge passing judge_rate with correlation phi."""
    p11 = theta * judge_rate + phi * math.sqrt(theta * (1 - theta) * judge_rate * (1 - judge_rate))
    n11, n1, nf = round(N * p11), round(N * theta), round(N * judge_rate)
    n10, n01 = n1 - n11, nf - n11
    n00 = N - n11 - n10 - n01
    if min(n11, n10, n01, n00) < 0:
        return None
    gold = np.r_[np.ones(n11), np.ones(n10), np.zeros(n01), np.zeros(n00)]
    judge = np.r_[np.ones(n11), np.zeros(n10), np.ones(n01), np.zeros(n00)]
    return gold, judge


def training_grid():
    for N in (300, 1200, 3000):
        for theta in (0.50, 0.62, 0.85, 0.93, 0.97):
            for phi in (0.0, 0.4, 0.7, 0.9):
                made = population(N, theta, min(theta + 0.03, 0.99), phi)
                if made is not None:
                    yield f"train N={N} theta={theta} phi={phi}", *made


def replayed(
    name: str, gold: np.ndarray, f: np.ndarray, phi: float, decide, *, orders: int, rng, **extra
) -> list[dict]:
    """The median labels to a decision of `decide` (the uniform design's rule, reading `f` beside gold) along random
    orders, at each margin and side, with what the price needs (`phi`) and `extra`."""
    N = gold.size
    theta = float(gold.mean())
    perm = np.argsort(rng.random((orders, N)), axis=1)
    ys, fs = gold[perm], f[perm]
    rows = []
    for margin in MARGINS:
        for side, minimum in ((PASS, theta - margin), (FAIL, theta + margin)):
            if not 0 < minimum < 1:
                continue
            d = decide(gold=ys, f=fs, minimum=minimum, confidence=CONFIDENCE, min_gold=MIN_GOLD)
            rows.append(
                {"set": name, "N": N, "theta": theta, "phi": phi, "margin": margin, "side": side}
                | {"minimum": minimum, "measured": float(np.median(d.at))}
                | extra
            )
    return rows


def medians(name: str, gold: np.ndarray, judge: np.ndarray, *, orders: int, rng) -> list[dict]:
    """The one-bit uniform design's median labels to a decision at each margin and side."""
    phi = float(np.corrcoef(gold, judge)[0, 1]) if judge.std() > 0 else 0.0
    return replayed(name, gold, judge, phi, decide_each_label, orders=orders, rng=rng)


def jury_medians(
    name: str, gold: np.ndarray, signals: np.ndarray, *, orders: int, rng, judge_phi: float = 0.0
) -> list[dict]:
    """As `medians`, for an audit reading the jury's signals (N, K): "phi" is the jury's cross-validated R, what the
    report prices it at; "in_sample" the whole-set fit's R beside it; "judge_phi" the judge alone's phi (what the
    report priced before the jury was)."""
    design = np.column_stack([np.ones(gold.size), signals])
    fitted = design @ np.linalg.lstsq(design, gold, rcond=None)[0]
    in_sample = float(np.corrcoef(fitted, gold)[0, 1])
    R = cross_validated_r(gold, signals) or 0.0
    return replayed(
        name, gold, signals, R, jury_decide_each_label, orders=orders, rng=rng, in_sample=in_sample, judge_phi=judge_phi
    )


def jury_sets(rng) -> list[tuple[str, np.ndarray, np.ndarray, float]]:
    """bench/audit_jury.py's sets: name, gold, the jury's signals (gold rater 2 on the public sets), and the phi of
    its one-bit judge (the best of the three on the synthetic jury, the majority of the five samples, rater 0)."""
    from bench import audit_jury

    made = [audit_jury.synthetic_jury(rng), audit_jury.synthetic_samples(rng)]
    base = datasets_dir()
    if base.is_dir():
        made += [*audit_jury.qags(base, 2), *audit_jury.usr(base, 2), *audit_jury.xsum(base, 2)]
    return [(name, gold, signals, float(np.corrcoef(gold, judge)[0, 1])) for name, gold, judge, signals, _ in made]


def small_calibrations(rng, sizes=(30, 60, 100, 200), draws: int = 300) -> None:
    """What a report on a small calibration reads for a jury: the cross-validated and the in-sample R of random
    calibrations of each size drawn from a 20,000-output synthetic jury, beside the population's R."""
    from bench import audit_jury

    _, gold, _, signals, _ = audit_jury.synthetic_jury(rng, N=20_000)
    print(f"\nthe synthetic jury's R on small calibrations (population R {cross_validated_r(gold, signals):.3f}):")
    for n in sizes:
        cross, fitted = [], []
        for _ in range(draws):
            idx = rng.choice(gold.size, n, replace=False)
            r = cross_validated_r(gold[idx], signals[idx])
            if r is None:
                continue
            design = np.column_stack([np.ones(n), signals[idx]])
            fit_values = design @ np.linalg.lstsq(design, gold[idx], rcond=None)[0]
            cross.append(r)
            fitted.append(float(np.corrcoef(fit_values, gold[idx])[0, 1]))
        low, high = np.quantile(cross, [0.25, 0.75])
        print(
            f"  n {n:3d}: cross-validated R median {np.median(cross):.3f} (quartiles {low:.3f} to {high:.3f}),"
            f" in-sample R median {np.median(fitted):.3f}"
        )


def large(*, orders: int, rng, horizon: int = 4000) -> list[dict]:
    """20,000-output synthetic candidates (the training grid stops at 3,000), each at one minimum; the rule is
    replayed to `horizon` labels (a decision after it counts as horizon + 1, and the count is printed)."""
    N = 20_000
    rows = []
    for theta, phi, minimum in ((0.70, 0.6, 0.65), (0.70, 0.6, 0.75), (0.85, 0.3, 0.90), (0.95, 0.6, 0.90)):
        made = population(N, theta, min(theta + 0.03, 0.99), phi)
        assert made is not None
        gold, judge = made
        perm = np.argsort(rng.random((orders, N)), axis=1)
        d = decide_each_label(
            gold=gold[perm][:, :horizon], f=judge[perm], minimum=minimum, confidence=CONFIDENCE, min_gold=MIN_GOLD
        )
        at = np.where(d.at > 0, d.at, horizon + 1)
        print(
            f"  N {N:,}, theta {theta}, minimum {minimum}: {int((d.at < 0).sum())} of {orders} undecided by {horizon}"
        )
        rows.append(
            {
                "set": f"large theta={theta} phi={phi}",
                "N": N,
                "theta": theta,
                "phi": float(np.corrcoef(gold, judge)[0, 1]),
            }
            | {"margin": round(abs(theta - minimum), 10), "side": PASS if theta > minimum else FAIL}
            | {"minimum": minimum, "measured": float(np.median(at))}
        )
    return rows


def priced(row: dict) -> int:
    return labels_per_decision(
        phi=row["phi"], pass_rate=row["theta"], margin=row["margin"], N=row["N"], minimum=row["minimum"]
    ).labels


def priced_before(row: dict) -> int:
    """The price before issue 38: twice the fixed-n sample size (with the finite-population correction)."""
    fixed = labels_per_decision(phi=row["phi"], pass_rate=row["theta"], margin=row["margin"], N=row["N"]).fixed_n
    return min(row["N"], max(min(MIN_GOLD, row["N"]), math.ceil(2.0 * fixed)))


def fit(rows: list[dict]) -> tuple[float, float, float]:
    """PRICE_SCALE, PRICE_START, PRICE_TRUTH_WEIGHT minimising the mean squared log error (Nelder-Mead)."""
    from scipy.optimize import minimize

    def loss(x: np.ndarray) -> float:
        saved = audit_forecast.PRICE_SCALE, audit_forecast.PRICE_START, audit_forecast.PRICE_TRUTH_WEIGHT
        audit_forecast.PRICE_SCALE, audit_forecast.PRICE_START, audit_forecast.PRICE_TRUTH_WEIGHT = map(float, x)
        try:
            return float(np.mean([math.log(priced(r) / r["measured"]) ** 2 for r in rows]))
        finally:
            audit_forecast.PRICE_SCALE, audit_forecast.PRICE_START, audit_forecast.PRICE_TRUTH_WEIGHT = saved

    best = min(
        (minimize(loss, [1.5, 5.0, w], method="Nelder-Mead", options={"maxiter": 4000}) for w in (0.1, 0.5, 0.9)),
        key=lambda r: r.fun,
    )
    return tuple(float(v) for v in best.x)  # type: ignore[return-value]


def report(rows: list[dict], title: str) -> None:
    print(f"\n{title}: median labels to a decision (uniform design), measured and priced")
    print(f"  {'set':<40} {'N':>5} {'phi':>5} {'margin':>6} {'side':>4} {'measured':>8} {'price':>6} {'error':>7}"
          f" {'before':>6} {'error':>7}")  # fmt: skip
    errors, before = [], []
    for r in rows:
        price, old = priced(r), priced_before(r)
        errors.append(price / r["measured"] - 1)
        before.append(old / r["measured"] - 1)
        print(
            f"  {r['set']:<40} {r['N']:5d} {r['phi']:5.2f} {r['margin']:6.2f} {r['side']:>4} {r['measured']:8.1f}"
            f" {price:6d} {100 * errors[-1]:+6.1f}% {old:6d} {100 * before[-1]:+6.1f}%"
        )
    worst = int(np.argmax(np.abs(errors)))
    print(
        f"  price: median |error| {100 * np.median(np.abs(errors)):.1f}%, worst {100 * errors[worst]:+.1f}%"
        f" ({rows[worst]['set']}, {rows[worst]['margin']:.2f}, {rows[worst]['side']}); within {100 * GOAL:.0f}%:"
        f" {sum(abs(e) <= GOAL for e in errors)} of {len(errors)}"
    )
    print(
        f"  before: median |error| {100 * np.median(np.abs(before)):.1f}%, range {100 * min(before):+.1f}% to"
        f" {100 * max(before):+.1f}%; within {100 * GOAL:.0f}%: {sum(abs(e) <= GOAL for e in before)} of {len(before)}"
    )


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--orders", type=int, default=500)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--fit", action="store_true", help="refit the constants on the training grid first")
    parser.add_argument("--large", action="store_true", help="also 20,000-output candidates (100 orders)")
    parser.add_argument("--only-jury", action="store_true", help="only the juries (bench/audit_jury.py's sets)")
    args = parser.parse_args()
    rng = np.random.default_rng(args.seed)
    started = time.perf_counter()
    if args.fit:
        train = [
            row
            for name, gold, judge in training_grid()
            for row in medians(name, gold, judge, orders=args.orders, rng=rng)
        ]
        report(train, "training grid, with the constants in audit_forecast")
        scale, start, weight = fit(train)
        print(f"  fitted: PRICE_SCALE = {scale:.3f}, PRICE_START = {start:.2f}, PRICE_TRUTH_WEIGHT = {weight:.2f}")
        audit_forecast.PRICE_SCALE, audit_forecast.PRICE_START, audit_forecast.PRICE_TRUTH_WEIGHT = scale, start, weight
        report(train, "training grid, with the fitted constants")
    base = datasets_dir()
    if not base.is_dir():
        print(f"no datasets at {base} (set ICEWATER_DATASETS_DIR): synthetic sets only", file=sys.stderr)
    if not args.only_jury:
        held_out = []
        sources = [synthetic()]
        if base.is_dir():
            sources = [qags(base), usr(base), xsum(base), *sources]
        for source in sources:
            for name, gold, judge in source:
                held_out += medians(name, gold, judge, orders=args.orders, rng=rng)
        report(held_out, "held out (bench/audit.py's sets)")
    juries = [
        row
        for name, gold, signals, judge_phi in jury_sets(rng)
        for row in jury_medians(name, gold, signals, orders=args.orders, rng=rng, judge_phi=judge_phi)
    ]
    report(juries, "juries (bench/audit_jury.py's sets; phi: the jury's cross-validated R)")
    for name in dict.fromkeys(r["set"] for r in juries):
        first = next(r for r in juries if r["set"] == name)
        print(f"  {name}: cross-validated R {first['phi']:.3f}, in-sample R {first['in_sample']:.3f}")
    alone = [
        labels_per_decision(
            phi=r["judge_phi"], pass_rate=r["theta"], margin=r["margin"], N=r["N"], minimum=r["minimum"]
        ).labels
        / r["measured"]
        - 1
        for r in juries
    ]
    print(
        f"  the jury audits priced at the one-bit judge's phi instead (the report before): median |error|"
        f" {100 * np.median(np.abs(alone)):.1f}%, range {100 * min(alone):+.1f}% to {100 * max(alone):+.1f}%;"
        f" within {100 * GOAL:.0f}%: {sum(abs(e) <= GOAL for e in alone)} of {len(alone)}"
    )
    small_calibrations(rng)
    if args.large:
        report(large(orders=100, rng=rng), "held out, 20,000 outputs")
    print(f"\n{time.perf_counter() - started:.0f} s")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
