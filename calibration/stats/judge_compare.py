"""Two judge config versions on the same gold items, paired: pure functions, no Django.

The report compares each judge against gold on its own; here the two judges graded the same items,
so their difference can be tested item by item, which is far more sensitive than comparing two
intervals that overlap. Per criterion:

- kappa with its interval, TPR and TNR with Wilson intervals, for each version (metrics.py's functions);
- the items that flipped: *fixed* (A wrong, B right) and *broken* (A right, B wrong), false passes first
  (A's false pass fixed, B's false pass new), then by output;
- McNemar's exact test of the paired correctness (statsmodels' `mcnemar(exact=True)`: a two-sided
  binomial test of the fixed against the broken count; the items both got right or both got wrong say
  nothing about which version is better);
- a paired bootstrap interval of Δkappa = kappa(B) − kappa(A): items resampled jointly, each carrying
  its gold and both verdicts (see DELTA_REPLICATES).

Which items count: an item is compared when its gold and *both* verdicts are PASS or FAIL. ERROR is not
a FAIL (the judge did not answer), and neither are ABSTAIN and N/A: such an item is left out of both
versions' figures, pairwise, so both are measured on exactly the same items, and the left-out items are
counted (`excluded`, by reason) and shown beside the figures. A version with many errors is not helped
by them: they cost it comparable items, which the counts show.

Input frame, one row per item of one criterion: output, gold, a, b (outcome strings; a missing verdict
is "" or None).
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd
from numpy.typing import NDArray
from statsmodels.stats.contingency_tables import mcnemar

from calibration.stats.metrics import (
    BINARY,
    BOOTSTRAP_SEED,
    CI_CONFIDENCE,
    ERROR,
    FAIL,
    PASS,
    Agreement,
    Rates,
    classification_rates,
    cohen_agreement,
    kappa_from_cells,
    percentile_interval,
    resample_patterns,
)

# Paired bootstrap of Δkappa. An item is one of eight patterns (gold, A, B each PASS or FAIL), so
# resampling n items with replacement is a multinomial draw of the eight pattern counts (as for kappa in
# metrics.py; both kappas of a replicate come from the same draw, which is what makes it paired). B = 2000
# replicates, as for the kappa interval (Efron & Tibshirani 1993, ch. 13: B >= 1000 for percentile
# intervals); a fixed seed, so the same items always give the same interval. A replicate in which either
# kappa is undefined is left out of the percentiles.
DELTA_REPLICATES = 2000
DELTA_SEED = BOOTSTRAP_SEED

FIXED = "fixed"
BROKEN = "broken"

# Why an item is left out of a comparison (counted per reason; an item is counted under its first reason).
NO_GOLD = "gold is not PASS or FAIL"
A_ERROR = "A: ERROR"
B_ERROR = "B: ERROR"
A_OTHER = "A: no PASS/FAIL verdict"
B_OTHER = "B: no PASS/FAIL verdict"


@dataclass(frozen=True)
class Flip:
    """An item on which the two versions disagree: `kind` is FIXED (B right) or BROKEN (B wrong).

    `false_pass` is set when the wrong verdict of the two is a PASS on a gold FAIL: A's false pass that B
    fixed, or a false pass B brought in.
    """

    output: int
    gold: str
    a: str
    b: str
    kind: str

    @property
    def false_pass(self) -> bool:
        return self.gold == FAIL


@dataclass(frozen=True)
class McNemar:
    """The paired correctness of A and B against gold: both right, only A right (broken by B), only B right
    (fixed by B), both wrong; the exact test's p-value (two-sided). With no discordant item there is nothing
    to test and p is 1."""

    both_right: int
    broken: int
    fixed: int
    both_wrong: int
    p_value: float

    @property
    def discordant(self) -> int:
        return self.broken + self.fixed


@dataclass(frozen=True)
class JudgeComparison:
    """A against B on one criterion, over the `n` items where gold and both verdicts are PASS or FAIL."""

    n: int
    excluded: dict[str, int]
    a: Agreement
    b: Agreement
    a_rates: Rates
    b_rates: Rates
    delta_kappa: float | None
    delta_kappa_ci: tuple[float, float] | None
    mcnemar: McNemar
    flips: tuple[Flip, ...]

    @property
    def fixed(self) -> list[Flip]:
        return [f for f in self.flips if f.kind == FIXED]

    @property
    def broken(self) -> list[Flip]:
        return [f for f in self.flips if f.kind == BROKEN]

    @property
    def errors(self) -> tuple[int, int]:
        """ERROR verdicts of A and of B among the items with gold (left out, never counted as FAIL)."""
        return self.excluded.get(A_ERROR, 0), self.excluded.get(B_ERROR, 0)


def _reason(gold: object, a: object, b: object) -> str | None:
    if gold not in BINARY:
        return NO_GOLD
    if a == ERROR:
        return A_ERROR
    if b == ERROR:
        return B_ERROR
    if a not in BINARY:
        return A_OTHER
    if b not in BINARY:
        return B_OTHER
    return None


def mcnemar_exact(*, both_right: int, broken: int, fixed: int, both_wrong: int) -> McNemar:
    """McNemar's exact test of paired correctness (statsmodels), on the 2x2 table of A right/wrong by B."""
    table = [[both_right, broken], [fixed, both_wrong]]
    p_value = float(mcnemar(table, exact=True).pvalue) if broken + fixed else 1.0
    return McNemar(both_right, broken, fixed, both_wrong, p_value)


# The eight (gold, A, B) patterns in a fixed order: pass = 1.
_PATTERNS = [(g, a, b) for g in (1, 0) for a in (1, 0) for b in (1, 0)]


def _cells(
    pass_gold: NDArray[np.integer[Any]], pass_rater: NDArray[np.integer[Any]], weights: NDArray[np.integer[Any]]
) -> list[NDArray[np.int64]]:
    """(true pass, false pass, false fail, true fail) counts per row of pattern weights."""
    masks = [(pass_rater == 1) & (pass_gold == 1), (pass_rater == 1) & (pass_gold == 0)]
    masks += [(pass_rater == 0) & (pass_gold == 1), (pass_rater == 0) & (pass_gold == 0)]
    return [weights @ m.astype(np.int64) for m in masks]


def paired_delta_kappa_ci(
    gold: NDArray[np.object_],
    a: NDArray[np.object_],
    b: NDArray[np.object_],
    *,
    replicates: int = DELTA_REPLICATES,
    seed: int = DELTA_SEED,
    confidence: float = CI_CONFIDENCE,
) -> tuple[float, float] | None:
    """Percentile interval of kappa(B) − kappa(A) over items resampled jointly (see DELTA_REPLICATES).

    All three arrays hold PASS or FAIL only, one entry per item. None when there is no item or no
    replicate with both kappas defined.
    """
    gold, a, b = (np.asarray(x, dtype=object) == PASS for x in (gold, a, b))
    if gold.size == 0:
        return None
    pattern = np.array(_PATTERNS, dtype=np.int64)
    code = {p: i for i, p in enumerate(_PATTERNS)}
    counts = np.zeros(len(_PATTERNS), dtype=np.int64)
    for key, n in Counter(zip(gold.astype(int), a.astype(int), b.astype(int), strict=True)).items():
        counts[code[key]] = n
    draws = resample_patterns(counts, replicates=replicates, seed=seed)
    kappa_a = kappa_from_cells(*_cells(pattern[:, 0], pattern[:, 1], draws))
    kappa_b = kappa_from_cells(*_cells(pattern[:, 0], pattern[:, 2], draws))
    return percentile_interval(kappa_b - kappa_a, confidence)


def _flip_order(flip: Flip) -> tuple[int, int, int]:
    # False passes first (the dangerous cell), fixed before broken within each, then by output.
    return (0 if flip.false_pass else 1, 0 if flip.kind == FIXED else 1, flip.output)


def compare_judges(items: pd.DataFrame, *, replicates: int = DELTA_REPLICATES) -> JudgeComparison:
    """A (column `a`) against B (column `b`) on one criterion's items; see the module docstring."""
    rows = items[["output", "gold", "a", "b"]].itertuples(index=False, name=None)
    excluded: Counter[str] = Counter()
    kept: list[tuple[int, str, str, str]] = []
    for output, gold, a, b in rows:
        reason = _reason(gold, a, b)
        if reason:
            excluded[reason] += 1
        else:
            kept.append((int(output), gold, a, b))
    gold_ = np.array([k[1] for k in kept], dtype=object)
    a_ = np.array([k[2] for k in kept], dtype=object)
    b_ = np.array([k[3] for k in kept], dtype=object)
    agreement_a, agreement_b = cohen_agreement(a_, gold_), cohen_agreement(b_, gold_)
    right_a, right_b = a_ == gold_, b_ == gold_
    test = mcnemar_exact(
        both_right=int(np.sum(right_a & right_b)),
        broken=int(np.sum(right_a & ~right_b)),
        fixed=int(np.sum(~right_a & right_b)),
        both_wrong=int(np.sum(~right_a & ~right_b)),
    )
    flips = [
        Flip(output, gold, a, b, FIXED if b == gold else BROKEN)
        for output, gold, a, b in kept
        if (a == gold) != (b == gold)
    ]
    delta = None
    if agreement_a.kappa is not None and agreement_b.kappa is not None:
        delta = agreement_b.kappa - agreement_a.kappa
    return JudgeComparison(
        n=len(kept),
        excluded=dict(excluded),
        a=agreement_a,
        b=agreement_b,
        a_rates=_rates(agreement_a),
        b_rates=_rates(agreement_b),
        delta_kappa=delta,
        delta_kappa_ci=paired_delta_kappa_ci(gold_, a_, b_, replicates=replicates) if kept else None,
        mcnemar=test,
        flips=tuple(sorted(flips, key=_flip_order)),
    )


def _rates(agreement: Agreement) -> Rates:
    return classification_rates(agreement.true_pass, agreement.false_pass, agreement.false_fail, agreement.true_fail)
