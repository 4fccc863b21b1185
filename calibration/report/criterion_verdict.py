"""What a calibration report means for the lead's decision: per criterion, may it gate now, could it with
more labels, or can it not, and why. Pure: report rows in, words and numbers out (no Django, no queries).

Four answers, in the order a lead acts on them:

  gates now         the criterion already gates releases with this judge (an active gating mark), whatever
                    today's figures say: nothing left to decide but whether it stays (the report's approval
                    panel), so it is no longer offered as "may gate"
  may gate now      the criterion is in the gate tier (kappa >= GATE_MIN_KAPPA on at least MIN_N items)
  more labels       kappa so far would gate but there are too few items for a tier, or there is nothing to
                    compute kappa on yet (no data, one outcome only)
  cannot            the judge disagrees with people (kappa below the gate threshold, however many items),
                    people disagree with each other (the `humans_disagree` warning: gold itself is noisy,
                    so the definition needs work before any judge can be calibrated on it), or the judge has
                    no verdict on the criterion at all (a judge that grades only some criteria, e.g. an
                    imported one): more labels cannot help there

**The label budget.** For a criterion whose interval's lower end is below the threshold of the tier its
kappa points to (or with fewer than MIN_N items), how many compared items (gold PASS/FAIL and a judge
PASS/FAIL verdict: double-labeled outputs the annotators agree on, or adjudicated ones) it would need for
the lower end to clear that threshold if kappa stayed where it is. Analytic: with the four confusion cells'
proportions fixed (so kappa fixed), the large-sample standard error of kappa is proportional to 1/sqrt(n)
(Fleiss, Cohen & Everitt 1969; metrics.MIN_N's derivation uses the same approximation), so the distance
from kappa to the interval's lower end shrinks the same way. Scaling the report's own interval keeps the
budget consistent with what the page shows (at today's n it gives today's lower end):

    n_needed = ceil(n * ((kappa - low) / (kappa - threshold)) ** 2),   at least MIN_N

e.g. kappa 0.70 with its lower end at 0.50 on n = 80 items, gate threshold 0.60: 80 * (0.20 / 0.10)^2 =
320 items, 240 more. A kappa at or below the threshold never clears it (no budget: more labels narrow the
interval around a kappa that is too low). A point interval (every resample agreed, e.g. a perfect small
sample) cannot be scaled: the budget is then MIN_N, the least any tier needs.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass

from calibration.stats.metrics import GATE_MIN_KAPPA, MIN_N, TREND_MIN_KAPPA

GATING = "gating"
MAY_GATE = "may_gate"
MORE_LABELS = "more_labels"
CANNOT = "cannot"

# Why, as stable codes (the page words them; tests read them).
WHY_GATE = "gate"
WHY_FEW_ITEMS = "few_items"
WHY_NO_DATA = "no_data"
WHY_ONE_OUTCOME = "one_outcome"
WHY_JUDGE = "judge_disagrees"
WHY_PEOPLE = "people_disagree"
WHY_NO_VERDICTS = "no_verdicts"
WHY_GATING = "gating"

# Tier thresholds from the top, for the tier a kappa points to (metrics.tier_for's bands).
THRESHOLDS = (("gate", GATE_MIN_KAPPA), ("trend", TREND_MIN_KAPPA))

# A ratio computed in floating point can land a hair above a whole number (80 * 2.0000000000000004**2);
# this much is rounding, not a reason to ask for one more item.
_ROUNDING = 1e-9


@dataclass(frozen=True)
class LabelBudget:
    """How many compared items the criterion needs for its interval's lower end to clear `threshold`."""

    tier: str  # the tier whose threshold is the target
    threshold: float
    n: int  # compared items today
    needed: int  # compared items needed in all
    point_interval: bool = False  # the interval could not be scaled: `needed` is only the minimum for a tier

    @property
    def more(self) -> int:
        return max(self.needed - self.n, 0)


def tier_target(kappa: float) -> tuple[str, float] | None:
    """The highest tier whose threshold kappa reaches or passes, with that threshold; None below trend."""
    return next(((tier, t) for tier, t in THRESHOLDS if kappa >= t), None)


def label_budget(
    *, n: int, kappa: float | None, ci_low: float | None, threshold: float, tier: str, min_n: int = MIN_N
) -> LabelBudget | None:
    """The label budget (module docstring). None when no number of items helps: no kappa, no interval, or a
    kappa at or below the threshold."""
    if kappa is None or ci_low is None or n <= 0 or kappa <= threshold:
        return None
    gap = kappa - ci_low
    if gap <= 0:
        return LabelBudget(tier, threshold, n, max(min_n, n), point_interval=True)
    needed = n * (gap / (kappa - threshold)) ** 2
    return LabelBudget(tier, threshold, n, max(min_n, math.ceil(needed - _ROUNDING)))


@dataclass(frozen=True)
class CriterionVerdict:
    criterion: str
    answer: str  # GATING, MAY_GATE, MORE_LABELS or CANNOT
    why: str  # one of the WHY_ codes
    sentence: str
    budget: LabelBudget | None = None

    @property
    def needs_labels(self) -> bool:
        return self.budget is not None and self.budget.more > 0


def _k(x: float | None) -> str:
    return "undefined" if x is None else f"{x:.2f}"


def _budget_words(b: LabelBudget) -> str:
    if b.point_interval:
        return (
            f"its interval is a single point, so it cannot be scaled: label at least {b.more} more "
            f"(the {b.needed} any tier needs) and look again"
        )
    return (
        f"about {b.more} more compared item{'s' if b.more != 1 else ''} ({b.needed} in all) would lift the "
        f"interval's lower end above {b.threshold:g} if kappa stays where it is"
    )


def criterion_verdict(row) -> CriterionVerdict:
    """The answer for one report row (calibration.report.CriterionReport or anything with its fields)."""
    key, n, kappa = row.criterion, row.judge.n, row.judge.kappa
    low = row.judge.kappa_ci[0] if row.judge.kappa_ci else None
    codes = set(row.warning_codes)
    if getattr(row, "gating", False):
        # "here": the mark was made on its calibration set, which need not be the eval set this report is of.
        figures = f"here kappa {_k(kappa)} on {n} items" if n else "no compared items here today"
        return CriterionVerdict(
            key, GATING, WHY_GATING, f"it gates releases with this judge ({figures}); the approval panel has its mark"
        )
    if "humans_disagree" in codes:
        # The report's own warning says how far people agree (by whichever ceiling the report uses); only its
        # figure is repeated here, since the rest of it is what this sentence says.
        said = next((w.message for w in getattr(row, "warnings", ()) if w.code == "humans_disagree"), "")
        figure = said.split(": ", 1)[0].removeprefix("people ")
        return CriterionVerdict(
            key,
            CANNOT,
            WHY_PEOPLE,
            "people disagree with each other"
            + (f" (they {figure})" if figure else "")
            + ", so gold is noisy and no judge can be calibrated on it; sharpen the definition and its examples "
            "in a new rubric version",
        )
    if n == 0 and getattr(row, "judge_items", None) == 0 and row.buckets.no_verdict > 0:
        # Labeled items wait for this judge, which gave no verdict at all on the criterion: it does not grade it
        # (a judge that grades only some criteria), so neither labeling nor waiting makes it comparable.
        waiting = row.buckets.no_verdict
        return CriterionVerdict(
            key,
            CANNOT,
            WHY_NO_VERDICTS,
            f"this judge has no verdicts for {key}: {waiting} labeled item{'s' if waiting != 1 else ''} wait for one; "
            "it does not grade this criterion (or has not been run on it): run or import a judge that grades it",
        )
    if n == 0:
        return CriterionVerdict(
            key, MORE_LABELS, WHY_NO_DATA, "no item has both a gold label and a judge PASS/FAIL yet: label and judge"
        )
    if kappa is None or "constant_gold" in codes:
        return CriterionVerdict(
            key,
            MORE_LABELS,
            WHY_ONE_OUTCOME,
            "every compared item has the same gold outcome, so agreement beyond chance cannot be measured: "
            "add outputs where the other outcome is right",
        )
    target = tier_target(kappa)
    budget = None
    if target is not None and (n < MIN_N or (low is not None and low < target[1])):
        budget = label_budget(n=n, kappa=kappa, ci_low=low, threshold=target[1], tier=target[0])
    if row.tier == "gate":
        sentence = f"kappa {_k(kappa)} on {n} items is in the gate tier"
        if budget is not None and budget.more:
            sentence += f"; its interval still reaches {_k(low)}: {_budget_words(budget)}"
        return CriterionVerdict(key, MAY_GATE, WHY_GATE, sentence, budget)
    if kappa >= GATE_MIN_KAPPA:
        return CriterionVerdict(
            key,
            MORE_LABELS,
            WHY_FEW_ITEMS,
            f"kappa {_k(kappa)} would gate, but {n} items are fewer than the {MIN_N} a tier needs"
            + (f": {_budget_words(budget)}" if budget else ""),
            budget,
        )
    use = "good for watching trends with spot checks" if kappa >= TREND_MIN_KAPPA else "not usable"
    sentence = f"the judge disagrees with people too often (kappa {_k(kappa)}, below {GATE_MIN_KAPPA:g}: {use})"
    if "constant_judge" in codes:
        sentence = f"the judge gives one outcome on every item (kappa {_k(kappa)}): it cannot tell them apart"
    if budget is not None and budget.more:
        if budget.tier == row.tier:
            # Already in that tier by kappa: what is missing is an interval whose lower end clears its threshold.
            sentence += (
                f"; it is in the {budget.tier} tier, but its interval's lower end {_k(low)} is not above "
                f"{budget.threshold:g}: {_budget_words(budget)}"
            )
        else:
            sentence += f"; for the {budget.tier} tier {_budget_words(budget)}"
    return CriterionVerdict(key, CANNOT, WHY_JUDGE, sentence, budget)


@dataclass(frozen=True)
class Decision:
    """The report's verdict in words: the criteria by answer, in rubric order."""

    criteria: tuple[CriterionVerdict, ...]

    def _with(self, answer: str) -> list[CriterionVerdict]:
        return [c for c in self.criteria if c.answer == answer]

    @property
    def gating(self) -> list[CriterionVerdict]:
        return self._with(GATING)

    @property
    def may_gate(self) -> list[CriterionVerdict]:
        return self._with(MAY_GATE)

    @property
    def more_labels(self) -> list[CriterionVerdict]:
        return self._with(MORE_LABELS)

    @property
    def cannot(self) -> list[CriterionVerdict]:
        return self._with(CANNOT)

    def of(self, key: str) -> CriterionVerdict | None:
        return next((c for c in self.criteria if c.criterion == key), None)

    @property
    def headline(self) -> str:
        parts = []
        answers = (  # (one criterion, several): only "gates" agrees with its count
            (GATING, ("gates now", "gate now")),
            (MAY_GATE, ("may gate now",) * 2),
            (MORE_LABELS, ("could with more labels",) * 2),
            (CANNOT, ("cannot",) * 2),
        )
        for answer, (one, several) in answers:
            keys = [c.criterion for c in self._with(answer)]
            if keys:
                parts.append(f"{len(keys)} {one if len(keys) == 1 else several} ({', '.join(keys)})")
        return "; ".join(parts) + "." if parts else "This rubric version has no criteria."


def decide(rows: Iterable) -> Decision:
    return Decision(tuple(criterion_verdict(row) for row in rows))
