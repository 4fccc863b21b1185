"""What an audit will cost before it is run: the forecast of labels to a decision (simulated from the gold so far)
and the price of gating a criterion (labels per decision at the quoted margins, from the judge's phi). The
decision rule they replay is audit_stats.py's."""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass, field
from statistics import NormalDist
from typing import Any

import numpy as np

from calibration.stats.audit_replay import first_decisions_forward
from calibration.stats.audit_stats import (
    FAIL,
    FAIL_SIDE,
    MIN_GOLD,
    NOT_APPLICABLE,
    PASS,
    PASS_SIDE,
    Floats,
    Ints,
    Objects,
    checked_inputs,
    decide_each_label,
)
from calibration.stats.jury_fit import JuryFit


@dataclass(frozen=True)
class AuditForecast:
    k: int
    p_decided: float  # the chance of a decision within the next k labels
    p_pass: float
    p_fail: float
    expected_labels: float  # more labels to a decision, mean over the simulations
    p90_labels: int  # ... and its 90th percentile
    n_sims: int

    @classmethod
    def settled(cls, *, k: int, decided: str, n_sims: int) -> AuditForecast:
        """The forecast of an audit already decided: nothing more to forecast."""
        return cls(k, 1.0, float(decided == PASS), float(decided == FAIL), 0.0, 0, n_sims)


def audit_forecast(
    *,
    gold: Iterable[float | None],
    verdicts: Iterable[float | None],
    minimum: float,
    confidence: float = 0.95,
    k: int = 25,
    n_sims: int = 1000,
    seed: int = 0,
    min_gold: int = MIN_GOLD,
) -> AuditForecast:
    """A Monte Carlo forecast of the decision from the posterior predictive. Seeded and deterministic.

    The outputs fall in strata by the judge's verdict (PASS, FAIL, no usable verdict); the gold pass rate
    of each stratum gets a Beta(1, 1) prior updated with the settled gold in it. Each simulation draws the
    three rates, then the gold of every output without settled gold (pending ones included: they will
    settle), runs the decision rule along the plan's remaining order, and notes when it decides. Once N/A
    gold is among the labels, each stratum's share of N/A gets a Beta(1, 1) prior too and the simulated
    gold may be N/A; without it, nothing is drawn for N/A (the forecast is what it was). A forecast:
    it is as good as the strata describe the outputs, and it assumes the pending items settle before the
    labels that follow them.
    """
    if k < 0 or n_sims < 1:
        raise ValueError("k must be >= 0 and n_sims >= 1")
    g, raw, f = checked_inputs(gold=gold, verdicts=verdicts, confidence=confidence)
    n = g.size
    # The decision alone (not audit_decision, whose bounds the forecast does not need).
    current = decide_each_label(
        gold=g[None, :], f=f, minimum=minimum, confidence=confidence, min_gold=min_gold
    ).decided[0]
    if current:
        return AuditForecast.settled(k=k, decided=current, n_sims=n_sims)
    rng = np.random.default_rng(seed)
    strata = np.where(np.isnan(raw), 2, raw).astype(int)  # 0 judge FAIL, 1 judge PASS, 2 no verdict
    drawn = posterior_gold(gold=g, strata=strata, n_strata=3, n_sims=n_sims, rng=rng)
    # The labels before the first pending one are every simulation's, and decide nothing (the plan is undecided).
    shared = int(np.argmax(np.r_[np.isnan(g), True]))
    decisions, at_label = first_decisions_forward(
        drawn=drawn, f=f, shared=shared, minimum=minimum, confidence=confidence, min_gold=min_gold
    )
    return forecast_of(decisions=decisions, at_label=at_label, n=n, k=k)


def posterior_gold(*, gold: Floats, strata: Ints, n_strata: int, n_sims: int, rng: np.random.Generator) -> Ints:
    """Every output's gold in each of n_sims simulations (n_sims, N): int8, 1, 0, -1 N/A; settled gold as it is.

    strata (N,): each output's stratum, 0 ... n_strata - 1. Each stratum's pass rate gets a Beta(1, 1) prior updated
    with the settled PASS/FAIL gold in it, drawn once per simulation, and each output without settled gold (pending
    ones included) is drawn from its stratum's rate. Once N/A gold is among the labels, each stratum's share of N/A
    gets a Beta(1, 1) prior too and a drawn gold may be N/A. The draws come in this order (the rates, then the N/A
    shares, then the gold a block of simulations at a time), so the same seed draws the same gold."""
    N, n = strata.size, gold.size
    known = np.concatenate([~np.isnan(gold), np.zeros(N - n, dtype=bool)])
    full = np.concatenate([gold, np.full(N - n, np.nan)])
    rates = []
    for s in range(n_strata):
        in_s = strata == s
        ones = int(np.sum(full[in_s & known] == 1))
        zeros = int(np.sum(full[in_s & known] == 0))
        rates.append(rng.beta(1 + ones, 1 + zeros, size=n_sims))
    with_na = bool(np.any(gold == NOT_APPLICABLE))
    na_rates = []
    if with_na:
        for s in range(n_strata):
            in_s = strata == s
            na_count = int(np.sum(full[in_s & known] == NOT_APPLICABLE))
            rated = int(np.sum(np.isin(full[in_s & known], (0.0, 1.0))))
            na_rates.append(rng.beta(1 + na_count, 1 + rated, size=n_sims))
    # The simulated gold of every output, one row per simulation: int8 (1, 0, -1 for N/A), 1 byte a cell. Drawn
    # in blocks of rows so the float temporaries stay near 2 million cells on large candidates.
    chunk = max(1, _CELLS // N)
    drawn = np.empty((n_sims, N), dtype=np.int8)
    for start in range(0, n_sims, chunk):
        sims = np.tile(full, (min(chunk, n_sims - start), 1))
        for s in range(n_strata):
            todo = (strata == s) & ~known
            rate = rates[s][start : start + sims.shape[0], None]
            sims[:, todo] = (rng.random((sims.shape[0], int(todo.sum()))) < rate).astype(float)
            if with_na:
                na_rate = na_rates[s][start : start + sims.shape[0], None]
                drawn_na = rng.random((sims.shape[0], int(todo.sum()))) < na_rate
                sims[:, todo] = np.where(drawn_na, NOT_APPLICABLE, sims[:, todo])
        drawn[start : start + sims.shape[0]] = sims
    return drawn


def forecast_of(*, decisions: Objects, at_label: Ints, n: int, k: int) -> AuditForecast:
    """The forecast's figures from each simulation's first decision and its label (1-based), n labeled so far."""
    # With every gold known the exact rule decides, so each simulation decides by label N at the latest.
    more = np.maximum(at_label - n, 0)
    within = more <= k
    return AuditForecast(
        k=k,
        p_decided=float(within.mean()),
        p_pass=float((within & (decisions == PASS)).mean()),
        p_fail=float((within & (decisions == FAIL)).mean()),
        expected_labels=float(more.mean()),
        p90_labels=int(np.ceil(np.quantile(more, 0.9))),
        n_sims=int(more.size),
    )


# The simulated gold is drawn on blocks of about this many cells (simulations x outputs).
_CELLS = 2_000_000


# The price of gating is the median labels to a decision of the default design, the uniform plan (issue 38, item 5:
# tests/calibration/audits/test_price_design.py holds it to the plans' default). It is not a fixed-n sample size times
# a constant, the model before, which was off by up to 2x against the measured medians (36 labels priced where 77
# were needed, 146 where 115 were): an anytime-valid test pays (a) a start-up cost that grows as 1/margin, not as the
# variance over margin^2 (the bets' variance prior, the judge's slope and the bets' size are learned from the labels;
# the minimum of 20 gold; the mixture over bets), which a factor on a small fixed-n misses; (b) the finite
# population on the whole anytime sample: the test without replacement bets with a drift that grows as N / (N - t),
# so the labels are A / (1 + A / N) for the anytime sample A, where a factor on n0 / (1 + n0 / N) applies the finite
# population before the anytime cost and overprices where A nears N; and (c) the variance of the null, the
# minimum's m (1 - m), more than the truth's. The constants are fitted by bench/audit_price.py --fit on a grid of
# synthetic known-truth candidates, none of them a set the bench reports; docs/calibration.md, "The price of gating",
# has the held-out figures.
PRICED_DESIGN = "uniform"
PRICE_SCALE = 1.38  # a: labels per unit of z^2 sigma^2 / margin^2
PRICE_START = 6.3  # b: the start-up cost, b / margin labels at a gold standard deviation of 0.5 (63 at 0.10)
PRICE_TRUTH_WEIGHT = 0.46  # w: the truth's share of the gold variance, the minimum's the rest


@dataclass(frozen=True)
class LabelCost:
    margin: float
    N: int
    labels: int  # the estimate of labels per release decision (the median), capped at N
    fixed_n: int  # the fixed-n sample size at the same variance (for comparison; not what labels scales)
    variance_share: float  # 1 - phi^2: the share of the variance the judge leaves


def labels_per_decision(
    *, phi: float, pass_rate: float, margin: float, N: int, confidence: float = 0.95, minimum: float | None = None
) -> LabelCost:
    """An estimate of the median labels the uniform audit takes to decide when theta (`pass_rate`) is `margin` away
    from `minimum` (None: the minimum is taken at the pass rate itself, the report's older, side-less price).

    The gold variance s^2 = w p (1 - p) + (1 - w) m (1 - m) (m the minimum), of which the judge (correlation phi
    with gold) leaves (1 - phi^2); the anytime sample A = a z^2 s^2 (1 - phi^2) / margin^2 + b (2 s) / margin (z at
    (1 - confidence)/2; 2 s is 1 at p = m = 0.5), and without replacement from N outputs A / (1 + A / N), at least
    MIN_GOLD, at most N. a, b, w: PRICE_SCALE, PRICE_START, PRICE_TRUTH_WEIGHT, fitted on known-truth simulations
    of the uniform design (bench/audit_price.py). fixed_n is the fixed-n test's z^2 p (1 - p)(1 - phi^2) / margin^2
    with the finite-population correction. An estimate: it assumes the judge keeps its calibration correlation on the
    candidate.
    """
    if not (-1 <= phi <= 1 and 0 <= pass_rate <= 1 and 0 < margin < 1 and N >= 1):
        raise ValueError("phi in [-1, 1], pass_rate in [0, 1], margin in (0, 1), N >= 1")
    if minimum is not None and not 0 <= minimum <= 1:
        raise ValueError("minimum in [0, 1]")
    z = NormalDist().inv_cdf(1 - (1 - confidence) / 2)
    share = 1 - phi**2
    n0 = z**2 * pass_rate * (1 - pass_rate) * share / margin**2
    fixed = n0 / (1 + n0 / N)
    null = pass_rate if minimum is None else minimum
    w = PRICE_TRUTH_WEIGHT
    gold_variance = w * pass_rate * (1 - pass_rate) + (1 - w) * null * (1 - null)
    anytime = (
        PRICE_SCALE * z**2 * gold_variance * share / margin**2 + PRICE_START * 2 * math.sqrt(gold_variance) / margin
    )
    labels = min(N, max(min(MIN_GOLD, N), math.ceil(anytime / (1 + anytime / N))))
    return LabelCost(margin=margin, N=N, labels=int(labels), fixed_n=math.ceil(fixed), variance_share=share)


def phi_coefficient(*, true_pass: int, false_pass: int, false_fail: int, true_fail: int) -> float | None:
    """The correlation of the judge's PASS/FAIL with gold's (Pearson's r of two binary variables, the phi
    coefficient): (tp tn - fp fn) / sqrt((tp + fp)(fn + tn)(tp + fn)(fp + tn)). None when either side never varies."""
    tp, fp, fn, tn = true_pass, false_pass, false_fail, true_fail
    denominator = (tp + fp) * (fn + tn) * (tp + fn) * (fp + tn)
    if denominator == 0:
        return None
    return (tp * tn - fp * fn) / math.sqrt(denominator)


# The margins the price of gating is quoted at (issue 22, item 8): a candidate 0.10 and 0.05 from the minimum.
PRICE_MARGINS = (0.10, 0.05)


# Below this share of the variance explained (phi^2), the judge's verdicts save few labels: "the judge adds little".
LITTLE_HELP = 0.10


@dataclass(frozen=True)
class JuryPrice:
    """The price of gating with a jury (issue 38): the judge's vote share and other judge configs' verdicts on the
    same outputs, which a lead starting a uniform plan can add. Priced as one judge is, at the jury's correlation R
    with gold, cross-validated on the calibration (calibration/stats/jury_fit.py)."""

    configs: tuple[str, ...]  # the other judge configs, beside the judge itself
    R: float
    n: int  # the calibration items R was measured on
    costs: tuple[LabelCost, ...]  # as GatingPrice.costs, at R
    sides: dict[str, tuple[LabelCost, ...]] = field(default_factory=dict)

    def as_dict(self) -> dict[str, Any]:
        return {
            "configs": list(self.configs),
            "R": self.R,
            "n": self.n,
            "labels": {f"{c.margin:.2f}": c.labels for c in self.costs},
            "labels_by_side": {
                side: {f"{c.margin:.2f}": c.labels for c in costs} for side, costs in self.sides.items()
            },
        }


@dataclass(frozen=True)
class GatingPrice:
    """An estimate of the labels an audit of a candidate takes per release decision, from a calibration's figures."""

    criterion: str
    phi: float  # the judge-gold correlation on the calibration (0 where undefined: the judge then adds nothing)
    pass_rate: float  # the calibration's gold pass rate, taken as the candidate's where no minimum is given
    N: int  # the candidate size assumed
    costs: tuple[LabelCost, ...]  # one per margin of PRICE_MARGINS: the worse side where a minimum is given
    minimum: float | None = None  # the minimum the audit decides at; None: the calibration's pass rate stands in
    # Where a minimum is given, one per margin on each side: the candidate passing at minimum + margin ("PASS") and
    # at minimum - margin ("FAIL"). A lead meets either side, so the price quoted is the worse.
    sides: dict[str, tuple[LabelCost, ...]] = field(default_factory=dict)
    # What phi is the correlation of (issue 38): "verdict", the judge's PASS/FAIL, or "vote share", the share of PASS
    # among its repeated samples, which a uniform audit's jury predictor reads.
    predictor: str = "verdict"
    # Where other judge configs have verdicts on the calibration: the price with them as the audit's jury.
    jury: JuryPrice | None = None

    @property
    def jury_lowers(self) -> bool:
        return self.jury is not None and self.jury.costs[0].labels < self.costs[0].labels

    def _jury_words(self) -> str:
        if self.jury is None:
            return ""
        names = ", ".join(self.jury.configs)
        measured = f"cross-validated R {self.jury.R:.2f} on {self.jury.n} items"
        if self.jury_lowers:
            first, *rest = self.jury.costs
            more = "".join(f", {c.labels} at {c.margin:.2f}" for c in rest)
            return f"; with the jury of {names} ({measured}): about {first.labels} labels at {first.margin:.2f}{more}"
        return f"; a jury of {names} would not lower it ({measured})"

    @property
    def in_words(self) -> str:
        return self._judge_words() + self._jury_words()

    def _judge_words(self) -> str:
        what = "vote share takes" if self.predictor == "vote share" else "verdicts take"
        judge = (
            "the judge adds little"
            if self.phi**2 < LITTLE_HELP
            else f"the judge's {what} {self.phi**2:.0%} off the variance"
        )
        if self.minimum is None or not self.sides:
            head = f"gating {self.criterion} costs about {self.costs[0].labels} labels a release"
            rest = ", ".join(f"{c.labels} at a margin of {c.margin:.2f}" for c in self.costs[1:])
            return f"{head} when it is {self.costs[0].margin:.2f} from the minimum ({rest}); {judge}"
        above, below = self.sides[PASS_SIDE], self.sides[FAIL_SIDE]
        said = "; ".join(
            f"{max(a.labels, b.labels)} at {a.margin:.2f} from it ({b.labels} below, {a.labels} above)"
            for a, b in zip(above, below, strict=True)
        )
        return (
            f"gating {self.criterion} at the minimum {self.minimum:g} costs about {self.costs[0].labels} labels a "
            f"release of {self.N:,} outputs, on the worse side: {said}; {judge}"
        )

    def as_dict(self) -> dict[str, Any]:
        return {
            "criterion": self.criterion,
            "phi": self.phi,
            # Only where phi is not the verdict's: a report priced as before exports byte for byte as before.
            **({"predictor": self.predictor} if self.predictor != "verdict" else {}),
            "pass_rate": self.pass_rate,
            "N": self.N,
            "minimum": self.minimum,
            "labels": {f"{c.margin:.2f}": c.labels for c in self.costs},
            "labels_by_side": {
                side: {f"{c.margin:.2f}": c.labels for c in costs} for side, costs in self.sides.items()
            },
            "in_words": self.in_words,
            # Only where a jury exists: a report without other judge configs exports byte for byte as before.
            **({"jury": self.jury.as_dict()} if self.jury is not None else {}),
        }


def gating_price(
    *,
    criterion: str,
    cells: tuple[int, int, int, int],
    N: int,
    confidence: float = 0.95,
    minimum: float | None = None,
    vote_share_phi: float | None = None,
    jury: JuryFit | None = None,
) -> GatingPrice | None:
    """The price of gating one criterion (labels_per_decision at PRICE_MARGINS), from the calibration's confusion
    cells (true_pass, false_pass, false_fail, true_fail) and a candidate of N outputs. None without gold PASS/FAIL
    items judged PASS/FAIL, or N < 1. An estimate: it assumes the judge keeps its calibration correlation on the
    candidate (an audit's validity does not need it). With `minimum`, the candidate's pass rate is taken at each
    margin above and below it (issue 40: the side changes the variance, p (1 - p)), and the worse side is quoted;
    without, at the calibration's gold pass rate. `vote_share_phi`: the correlation with gold of the judge's vote
    share over its repeated samples on the same calibration, where known: what a uniform audit's predictor reads
    (issue 38), so it prices that audit; the cells still give the pass rate. `jury`: where other judge configs have
    verdicts on the calibration, the jury's cross-validated R, priced the same way beside the judge's own price."""
    tp, fp, fn, tn = cells
    n = tp + fp + fn + tn
    if n == 0 or N < 1:
        return None
    phi = phi_coefficient(true_pass=tp, false_pass=fp, false_fail=fn, true_fail=tn) or 0.0
    predictor = "verdict"
    if vote_share_phi is not None:
        phi, predictor = vote_share_phi, "vote share"
    pass_rate = (tp + fn) / n

    def priced(at: float) -> tuple[tuple[LabelCost, ...], dict[str, tuple[LabelCost, ...]]]:
        """The costs quoted (the worse side where a minimum is given) and each side's, at correlation `at`."""

        def cost(theta: float, margin: float, null: float | None = None) -> LabelCost:
            return labels_per_decision(phi=at, pass_rate=theta, margin=margin, N=N, confidence=confidence, minimum=null)

        if minimum is None:
            return tuple(cost(pass_rate, m) for m in PRICE_MARGINS), {}
        sides = {
            PASS_SIDE: tuple(cost(min(minimum + m, 1.0), m, minimum) for m in PRICE_MARGINS),
            FAIL_SIDE: tuple(cost(max(minimum - m, 0.0), m, minimum) for m in PRICE_MARGINS),
        }
        pairs = zip(sides[PASS_SIDE], sides[FAIL_SIDE], strict=True)
        return tuple(max(a, b, key=lambda c: c.labels) for a, b in pairs), sides

    costs, sides = priced(phi)
    jury_price = None
    if jury is not None:
        jury_costs, jury_sides = priced(jury.R)
        jury_price = JuryPrice(jury.configs, jury.R, jury.n, jury_costs, jury_sides)
    return GatingPrice(criterion, phi, pass_rate, N, costs, minimum, sides, predictor, jury_price)
