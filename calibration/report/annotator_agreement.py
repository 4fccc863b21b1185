"""Each annotator's agreement, per criterion: with gold their own label did not decide, and with the others.

Pure pandas and numpy, no Django (tests/config/test_pure_imports.py): the labels and adjudicated frames of
calibration/data/frames.py in, one small frozen dataclass per (criterion, annotator) out.

Gold that does not lean on the person. Gold is read by labeling.gold.derive_gold, the product's one rule,
but never over the person's own label: for each label, the item's gold is what derive_gold makes of the
OTHER annotators' labels and of the adjudications someone else decided. Otherwise the person is their own
referee: with three annotators under a majority policy, every item where the other two split is settled
by the person's vote, so they agree with "gold" there by construction, and a careless annotator looks
better the more often the others disagree (tests/calibration/report/test_annotator_agreement.py works such a case by
hand).
The price: an item counts only where the others alone settle gold. Since a lone label is never gold
(MIN_LABELS_FOR_MAJORITY), an item labeled by two people counts for either of them only once a reviewer
has adjudicated it, and those are mostly the items they disagreed on, so with two annotators per item
the figure reads as "how often their side won a dispute". The mean pairwise kappa beside it covers
every item they share with someone.

Flag rule: plain kappa, not Dawid-Skene. A person is flagged on a criterion when the upper end of the
95% interval of their Cohen's kappa with gold is below the median of the other annotators' kappas with
gold, and they have at least MIN_ITEMS_TO_FLAG items with such gold (only others with as many count
towards the median). Dawid-Skene (1979) would estimate each person's confusion matrix and the true
labels together, but it wants many items per person to fit two error rates each, assumes that people
err independently given the true label (people who share a misreading of the rubric do not), and its
output, a latent-class posterior fitted by EM, is hard for a lead to check by hand. Kappa with gold
is the figure the calibration report already shows for the judge, and a lead can recount it from the
drilldown.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any

import numpy as np
import pandas as pd

from calibration.data.frame_reading import annotator_pair_cells
from calibration.stats.metrics import (
    BINARY,
    CI_CONFIDENCE,
    Agreement,
    PairwiseKappa,
    WilsonBound,
    cohen_agreement,
    mean_pairwise_kappa,
    wilson_interval,
)
from labeling.gold import KEY, derive_gold

# PROVISIONAL (2026-12). Below this many items with gold a person is never flagged: at n = 20, 80% raw and
# 50% chance agreement, kappa's large-sample standard error is 0.8/sqrt(20) = 0.18, so its interval already
# spans about +-0.35; with fewer items nearly any person's interval reaches the others' median.
MIN_ITEMS_TO_FLAG = 20

LEAVE_ONE_OUT_COLUMNS = [*KEY, "annotator", "gold", "gold_source"]


@dataclass(frozen=True)
class AnnotatorAgreement:
    """One annotator on one criterion.

    `labeled`: items they said PASS or FAIL on. `gold`: their labels (the rater) against gold that does not
    depend on their own label, over the items where both are PASS or FAIL; its false_pass is how often they
    said PASS where gold is FAIL. `agreement`: the raw agreement with that gold (successes of n) and its
    Wilson interval. `others`: the mean Cohen's kappa with each other annotator over the items both said
    PASS or FAIL on. `bar`: the median of the other annotators' kappa with gold (None: none has enough
    items), which `flagged` compares the upper end of this person's interval with.
    """

    criterion: Any
    annotator: Any
    labeled: int
    gold: Agreement
    agreement: WilsonBound
    others: PairwiseKappa
    bar: float | None = None
    flagged: bool = False

    @property
    def gold_fails(self) -> int:
        """Items whose gold is FAIL (the false pass share's denominator)."""
        return self.gold.false_pass + self.gold.true_fail


def leave_one_out_gold(
    labels: pd.DataFrame, adjudicated: pd.DataFrame, policies: dict[Any, str] | None = None
) -> pd.DataFrame:
    """Per label, the item's gold as if its annotator had not labeled it: derive_gold over the other
    annotators' labels and the adjudications they did not decide themselves (a `decided_by` column, if
    `adjudicated` has one). Columns criterion, output, annotator, gold, gold_source; items the others
    alone do not settle are left out.
    """
    held = labels[[*KEY, "annotator"]].drop_duplicates(ignore_index=True)
    # derive_gold keys an item by (criterion, output): each (item, held-out annotator) becomes an item of
    # its own, numbered `unit`, so one call settles every person's gold at once.
    held = held.assign(unit=np.arange(len(held), dtype=np.int64))
    others = held.merge(labels[[*KEY, "annotator", "outcome"]], on=KEY, suffixes=("", "_other"))
    others = others[others["annotator"].to_numpy() != others["annotator_other"].to_numpy()]
    decided = held.merge(adjudicated, on=KEY)
    if "decided_by" in decided.columns:
        decided = decided[decided["decided_by"].to_numpy() != decided["annotator"].to_numpy()]
    gold = derive_gold(
        others[["criterion", "unit", "outcome"]].rename(columns={"unit": "output"}),
        decided[["criterion", "unit", "outcome"]].rename(columns={"unit": "output"}),
        policies,
    )
    if not len(gold):
        return pd.DataFrame({c: [] for c in LEAVE_ONE_OUT_COLUMNS})
    gold = gold.rename(columns={"output": "unit"}).astype({"unit": "int64"})
    return held.merge(gold, on=["criterion", "unit"])[LEAVE_ONE_OUT_COLUMNS]


def annotator_agreement(
    labels: pd.DataFrame,
    adjudicated: pd.DataFrame,
    policies: dict[Any, str] | None = None,
    *,
    min_items: int = MIN_ITEMS_TO_FLAG,
) -> list[AnnotatorAgreement]:
    """Every annotator's agreement on every criterion they said PASS or FAIL on, flagged by the module's rule.

    `labels`: criterion, output, annotator, outcome (calibration/data/frames.py load_labels); `adjudicated`:
    criterion, output, outcome, optionally decided_by; `policies`: criterion id -> gold policy. Ordered by
    criterion, then flagged people first, then lowest kappa with gold first (undefined last).
    """
    binary = labels.loc[labels["outcome"].isin(BINARY), [*KEY, "annotator", "outcome"]]
    gold = leave_one_out_gold(labels, adjudicated, policies)
    if gold.empty:  # no gold yet (one label per output so far): an empty frame's columns have no types to merge on
        compared = binary.iloc[:0].assign(gold=pd.Series(dtype=object))
    else:
        compared = binary.merge(gold[gold["gold"].isin(BINARY)], on=[*KEY, "annotator"])
    versus_gold = dict(iter(compared.groupby(["criterion", "annotator"], sort=False)))
    pairs = annotator_pair_cells(labels)
    rows = []
    for (criterion, person), mine in binary.groupby(["criterion", "annotator"], sort=True):
        versus = versus_gold.get((criterion, person), compared.iloc[:0])
        agreement = cohen_agreement(versus["outcome"], versus["gold"])
        rows.append(
            AnnotatorAgreement(
                criterion=criterion,
                annotator=person,
                labeled=int(mine[KEY].drop_duplicates().shape[0]),
                gold=agreement,
                agreement=wilson_interval(agreement.true_pass + agreement.true_fail, agreement.n, CI_CONFIDENCE),
                others=_with_others(pairs[pairs["criterion"].to_numpy() == criterion], person),
            )
        )
    return sorted(_flagged(rows, min_items), key=_order)


def _with_others(pairs: pd.DataFrame, person: Any) -> PairwiseKappa:
    """Mean kappa of `person` with each other annotator (one criterion's annotator_pair_cells). Kappa is
    symmetric in its two raters, so which of a pair is `first` does not matter."""
    mine = pairs[(pairs["first"].to_numpy() == person) | (pairs["second"].to_numpy() == person)]
    other = np.where(mine["first"].to_numpy() == person, mine["second"].to_numpy(), mine["first"].to_numpy())
    return mean_pairwise_kappa(pd.factorize(mine["output"])[0], pd.factorize(other)[0], mine["cell"].to_numpy())


def _flagged(rows: list[AnnotatorAgreement], min_items: int) -> list[AnnotatorAgreement]:
    """Set `bar` and `flagged` (see the module docstring for the rule and why)."""
    measured = [(r.criterion, r.annotator, r.gold.kappa) for r in rows if r.gold.n >= min_items]
    out = []
    for r in rows:
        rest = [k for c, a, k in measured if c == r.criterion and a != r.annotator and k is not None]
        bar = float(np.median(rest)) if rest else None
        ci = r.gold.kappa_ci
        flagged = bar is not None and r.gold.n >= min_items and ci is not None and ci[1] < bar
        out.append(replace(r, bar=bar, flagged=flagged))
    return out


def _order(r: AnnotatorAgreement) -> tuple:
    kappa = r.gold.kappa
    return (r.criterion, not r.flagged, kappa is None, kappa if kappa is not None else 0.0, r.annotator)
