"""What the release candidate's own gold says, beside the judge's verdicts (issue 40). Pure: no Django.

The gate's corrected and observed bounds read the judge's verdicts on the candidate; whenever the candidate also
has gold on some of its outputs, two questions come before any pass:

1. Does that gold alone refute the minimum pass rate? `gold_bound` answers with two upper bounds on the
   candidate's pass rate. The worst case (every output without gold PASS) assumes nothing and, when every output
   has gold, is the pass rate itself. The finite-population exact bound (hypergeometric, as Clopper-Pearson is for
   an infinite one) assumes the labeled outputs are a simple random sample of the candidate, which is known only
   for an audit's released order and for a census; for any other gold it is reported as "if random".
2. Do the judge's error rates on that gold differ from the calibration's? The corrected bound assumes they do
   not. `transport_test` is a two-sample test of each rate (Fisher's exact test, scipy), at half the stated level
   per rate so that the check as a whole warns falsely at most at the level (Bonferroni), with its power for the
   gold at hand (statsmodels' power of the two-proportion z-test, an approximation that bench/transport.py checks
   against Fisher's simulated power; under 50 candidate items, Fisher's own power summed exactly).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from scipy.stats import binom, fisher_exact, hypergeom
from statsmodels.stats.proportion import power_proportions_2indep

# The moves the transport test's power is stated for: a rate that falls by 0.10 or 0.05 from the calibration's.
POWER_MOVES = (0.10, 0.05)
# Below this chance of catching a drop of 0.10, "no warning" says little: the answer says so.
MEANINGFUL_POWER = 0.80

ASSUMES_CALIBRATION = "assumes the judge's error rates on the calibration set hold here"


# --- 1. The gold's own bound -----------------------------------------------------------------------------


def _cdf(x: int, population: int, successes: int, draws: int) -> float:
    return float(hypergeom.cdf(x, population, successes, draws))


def hypergeometric_interval(passes: int, fails: int, population: int, confidence: float) -> tuple[float, float]:
    """The exact two-sided interval of a population's pass rate from a simple random sample without replacement
    of passes + fails of its `population` outputs: the pass counts M not rejected at (1 - confidence) / 2 per
    side, over `population`. Without replacement it narrows to the point as the sample becomes the population."""
    n = passes + fails
    if not (0 <= passes and 0 <= fails and n <= population and population >= 1):
        raise ValueError(f"need 0 <= passes + fails <= population, got {passes} + {fails} of {population}")
    if not 0.0 < confidence < 1.0:
        raise ValueError(f"confidence must be strictly between 0 and 1, got {confidence}")
    tail = (1.0 - confidence) / 2
    if n == 0:
        return 0.0, 1.0
    # P(X <= passes | M) falls as M grows: the largest M with it above the tail is the upper end (bisection).
    lo, hi = passes, population - fails  # M can be no less than passes seen, no more than all but the fails seen
    while lo < hi:
        mid = (lo + hi + 1) // 2
        if _cdf(passes, population, mid, n) > tail:
            lo = mid
        else:
            hi = mid - 1
    upper = lo
    # P(X >= passes | M) = 1 - cdf(passes - 1) rises with M: the smallest M with it above the tail is the lower end.
    lo, hi = passes, population - fails
    while lo < hi:
        mid = (lo + hi) // 2
        if 1.0 - _cdf(passes - 1, population, mid, n) > tail:
            hi = mid
        else:
            lo = mid + 1
    return lo / population, upper / population


# Where the gold's sample comes from, which decides what its bound may claim.
CENSUS, AUDIT_ORDER, NOT_KNOWN_RANDOM = "census", "audit order", "not known to be random"


@dataclass(frozen=True)
class GoldBound:
    """The candidate's pass rate as its gold alone bounds it.

    `passes` and `fails` are outputs with gold PASS or FAIL, `unknown` those of the candidate without decisive gold
    (unlabeled, waiting, Can't tell); gold N/A is outside the rate, as a N/A verdict is. `sample` says whether the
    labeled outputs are a random sample (an audit's order), all of them (a census), or not known to be random.
    """

    passes: int
    fails: int
    unknown: int
    confidence: float
    sample: str
    lower: float | None  # the exact interval: valid as stated for CENSUS and AUDIT_ORDER, "if random" else
    upper: float | None
    worst_case_upper: float | None  # every output without gold PASS: valid whatever the sample

    @property
    def labeled(self) -> int:
        return self.passes + self.fails

    @property
    def is_random(self) -> bool:
        return self.sample in (CENSUS, AUDIT_ORDER)

    def refutes(self, minimum: float) -> bool:
        """The candidate's gold shows, with no assumption it cannot check, that the pass rate is below `minimum`."""
        if self.worst_case_upper is not None and self.worst_case_upper < minimum:
            return True
        return self.is_random and self.upper is not None and self.upper < minimum

    def would_refute_if_random(self, minimum: float) -> bool:
        """Not refuted, but the labeled outputs would refute `minimum` if they were a random sample."""
        return not self.refutes(minimum) and self.upper is not None and self.upper < minimum

    def in_words(self) -> str:
        if not self.labeled:
            return "no gold PASS/FAIL on the candidate"
        rate = self.passes / self.labeled
        if self.sample == CENSUS:
            return f"every output has gold: the pass rate is {rate:.3f} ({self.passes} of {self.labeled})"
        if self.sample == AUDIT_ORDER:
            kind, interval = "the audit's random order", f"the audit's anytime-valid {self.confidence:.0%} interval"
        else:
            kind, interval = "not known to be a random sample", f"{self.confidence:.0%} interval if random"
        return (
            f"{self.labeled} of {self.labeled + self.unknown} outputs have gold, {kind}: {self.passes} PASS "
            f"({rate:.3f}); {interval} [{self.lower:.3f}, {self.upper:.3f}]; at most {self.worst_case_upper:.3f} even "
            "if every other output passes"
        )

    def as_dict(self) -> dict[str, Any]:
        return {
            "passes": self.passes,
            "fails": self.fails,
            "unknown": self.unknown,
            "sample": self.sample,
            "lower": self.lower,
            "upper": self.upper,
            "worst_case_upper": self.worst_case_upper,
            "in_words": self.in_words(),
        }


def gold_bound(
    *, passes: int, fails: int, unknown: int, confidence: float, audit: tuple[float, float] | None = None
) -> GoldBound:
    """The candidate's gold counts -> its GoldBound. `audit`: the anytime-valid interval of an audit plan whose
    random order the labeled outputs follow (it replaces the exact interval, which assumes a uniform sample)."""
    population = passes + fails + unknown
    if population == 0 or passes + fails == 0:
        return GoldBound(passes, fails, unknown, confidence, NOT_KNOWN_RANDOM, None, None, None)
    if unknown == 0:  # a census: the rate itself, whatever an audit says
        sample, (lower, upper) = CENSUS, hypergeometric_interval(passes, fails, population, confidence)
    elif audit is not None:
        sample, (lower, upper) = AUDIT_ORDER, audit
    else:
        sample, (lower, upper) = NOT_KNOWN_RANDOM, hypergeometric_interval(passes, fails, population, confidence)
    return GoldBound(passes, fails, unknown, confidence, sample, lower, upper, (passes + unknown) / population)


# --- 2. The transport test ---------------------------------------------------------------------------------

# The calibration's confusion cells as a gating mark stores them in its figures.
CALIBRATION_CELLS = ("true_pass", "false_pass", "false_fail", "true_fail")


def calibration_cells(figures: Mapping[str, Any]) -> tuple[int, int, int, int] | None:
    """The cells a mark's figures hold, or None where any is missing or not a count (a mark made without them)."""
    cells = [figures.get(name) for name in CALIBRATION_CELLS]
    if not all(isinstance(c, int) and c >= 0 for c in cells):
        return None
    tp, fp, fn, tn = (int(c) for c in cells)  # type: ignore[arg-type]
    return tp, fp, fn, tn


@dataclass(frozen=True)
class RateMove:
    """One of the judge's rates (TPR or TNR) on the calibration and on the candidate's gold, tested for a move."""

    name: str  # "tpr" or "tnr"
    calibration_hits: int
    calibration_n: int
    candidate_hits: int
    candidate_n: int
    p_value: float | None  # Fisher's exact test, two-sided; None when either side has no gold of this kind
    level: float  # the level this rate is tested at (half the check's)
    power: dict[float, float | None]  # move -> the chance a drop of that size is caught with this much gold

    @property
    def calibration(self) -> float | None:
        return self.calibration_hits / self.calibration_n if self.calibration_n else None

    @property
    def candidate(self) -> float | None:
        return self.candidate_hits / self.candidate_n if self.candidate_n else None

    @property
    def moved(self) -> bool:
        return self.p_value is not None and self.p_value < self.level

    def as_dict(self) -> dict[str, Any]:
        return {
            "calibration": self.calibration,
            "calibration_n": self.calibration_n,
            "candidate": self.candidate,
            "candidate_n": self.candidate_n,
            "p_value": self.p_value,
            "moved": self.moved,
            "power": {f"{move:.2f}": p for move, p in self.power.items()},
        }


# Below this many candidate items of a rate, the z-test's normal approximation of the power is poor (4 gold FAIL
# outputs: 0.27 where Fisher's test catches a drop of 0.10 about 9% of the time): enumerate instead, which is cheap.
EXACT_POWER_BELOW = 50


def drop_power(
    *, rate: float, calibration_n: int, candidate_n: int, move: float, level: float, calibration_hits: int | None = None
) -> float | None:
    """The chance a two-sided test at `level` catches the candidate's rate lying `move` below the calibration's
    `rate`; None where the drop is impossible or a side is empty. statsmodels' power of the two-proportion z-test;
    under EXACT_POWER_BELOW candidate items, Fisher's own power with the calibration's count as observed
    (`calibration_hits`, else rate x n), summed over every count the candidate can show."""
    if calibration_n == 0 or candidate_n == 0 or rate - move <= 0.0:
        return None
    if candidate_n < EXACT_POWER_BELOW:
        hits = round(rate * calibration_n) if calibration_hits is None else calibration_hits
        table = [[hits, calibration_n - hits]]
        caught = [fisher_exact([*table, [b, candidate_n - b]])[1] < level for b in range(candidate_n + 1)]
        return float(binom.pmf(range(candidate_n + 1), candidate_n, rate - move)[caught].sum())
    power = power_proportions_2indep(
        -move, rate, candidate_n, ratio=calibration_n / candidate_n, alpha=level, return_results=False
    )
    return float(power)


def _rate_move(name: str, cal: tuple[int, int], cand: tuple[int, int], level: float) -> RateMove:
    (c_hits, c_n), (k_hits, k_n) = cal, cand
    p_value = None
    if c_n and k_n:
        p_value = float(fisher_exact([[c_hits, c_n - c_hits], [k_hits, k_n - k_hits]])[1])
    power = {
        move: drop_power(
            rate=c_hits / c_n, calibration_n=c_n, candidate_n=k_n, move=move, level=level, calibration_hits=c_hits
        )
        if c_n
        else None
        for move in POWER_MOVES
    }
    return RateMove(name, c_hits, c_n, k_hits, k_n, p_value, level, power)


TRANSPORT_WARNING = (
    "the judge's errors moved: the corrected bound borrows the calibration's rates and does not hold here"
)


@dataclass(frozen=True)
class TransportTest:
    """The judge's TPR and TNR on the candidate's gold against the calibration's (see the module's docstring)."""

    candidate_n: int  # outputs of the candidate with gold PASS/FAIL and a PASS/FAIL verdict
    level: float  # the whole check's: each rate is tested at level / 2
    tpr: RateMove
    tnr: RateMove

    @property
    def rates(self) -> tuple[RateMove, RateMove]:
        return self.tnr, self.tpr  # TNR first: a judge that misses failures makes the false passes

    @property
    def warning(self) -> str | None:
        moved = [r for r in self.rates if r.moved]
        if not moved:
            return None
        said = ", ".join(
            f"{r.name.upper()} {r.calibration:.3f} on the calibration, {r.candidate:.3f} on {r.candidate_n} gold "
            f"outputs of the candidate (Fisher p = {r.p_value:.2g})"
            for r in moved
            if r.calibration is not None and r.candidate is not None and r.p_value is not None
        )
        return f"{TRANSPORT_WARNING}: {said}"

    @property
    def too_little_gold(self) -> str | None:
        """Where no warning is not worth much: a drop of 0.10 in a rate would likely go unseen with this gold."""
        if self.warning:
            return None
        weak = []
        for r in self.rates:
            power = r.power.get(POWER_MOVES[0])
            if r.candidate_n == 0:
                weak.append(f"no gold {'PASS' if r.name == 'tpr' else 'FAIL'} output to measure its {r.name.upper()}")
            elif power is not None and power < MEANINGFUL_POWER:
                weak.append(
                    f"with {r.candidate_n} gold {'PASS' if r.name == 'tpr' else 'FAIL'} outputs a {r.name.upper()} "
                    f"drop of {POWER_MOVES[0]:.2f} would be caught about {power:.0%} of the time"
                )
        if not weak:
            return None
        return "no warning, but it means little: " + "; ".join(weak)

    def in_words(self) -> str:
        if self.warning:
            return self.warning
        return self.too_little_gold or (
            f"no move found at level {self.level:g} on {self.candidate_n} gold outputs (a drop of "
            f"{POWER_MOVES[0]:.2f} in either rate would be caught at least {MEANINGFUL_POWER:.0%} of the time)"
        )

    def as_dict(self) -> dict[str, Any]:
        return {
            "candidate_gold_n": self.candidate_n,
            "level": self.level,
            "test": "Fisher's exact test per rate, two-sided, at level / 2 each",
            "tpr": self.tpr.as_dict(),
            "tnr": self.tnr.as_dict(),
            "warning": self.warning,
            "too_little_gold": self.too_little_gold,
            "in_words": self.in_words(),
        }


def transport_test(
    *, calibration: tuple[int, int, int, int], candidate: tuple[int, int, int, int], level: float = 0.05
) -> TransportTest:
    """Pure: the judge's confusion cells (true_pass, false_pass, false_fail, true_fail) against gold on the
    calibration and on the candidate -> the TransportTest at `level` (1 - the gate's confidence)."""
    if not 0.0 < level < 1.0:
        raise ValueError(f"level must be strictly between 0 and 1, got {level}")
    (c_tp, c_fp, c_fn, c_tn), (k_tp, k_fp, k_fn, k_tn) = calibration, candidate
    tpr = _rate_move("tpr", (c_tp, c_tp + c_fn), (k_tp, k_tp + k_fn), level / 2)
    tnr = _rate_move("tnr", (c_tn, c_tn + c_fp), (k_tn, k_tn + k_fp), level / 2)
    return TransportTest(sum(candidate), level, tpr, tnr)
