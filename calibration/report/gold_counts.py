"""How much of what people labeled has gold (GoldCounts per criterion), and where a tie's item goes under a
gold policy."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from calibration.stats.metrics import BINARY, NOT_APPLICABLE
from evals.models import GoldPolicy
from labeling.gold import KEY, tied_items


@dataclass(frozen=True)
class GoldCounts:
    """How much of what people labeled has gold: items with a label or an adjudication, items whose
    labels tie (no adjudication), and items without PASS/FAIL/N/A gold yet (any reason)."""

    labeled_items: int = 0
    gold_ties: int = 0
    awaiting_gold: int = 0


def gold_counts_by_criterion(
    labels: pd.DataFrame, adjudicated: pd.DataFrame, gold: pd.DataFrame
) -> dict[object, GoldCounts]:
    """GoldCounts per criterion. Items are compared as (criterion, output) pairs of integer ids."""
    seen = pd.concat([labels[KEY], adjudicated[KEY]], ignore_index=True).drop_duplicates()
    if not len(seen):
        return {}
    settled = gold.loc[gold["gold"].isin(BINARY + (NOT_APPLICABLE,)), KEY]
    tied = tied_items(labels)
    width = int(max(seen["output"].max(), 0)) + 1

    def ids(df: pd.DataFrame) -> np.ndarray:
        return df["criterion"].to_numpy(dtype=np.int64) * width + df["output"].to_numpy(dtype=np.int64)

    unsettled = ~np.isin(ids(seen), ids(settled))
    tied_open = tied["criterion"].to_numpy()[~np.isin(ids(tied), ids(adjudicated))]
    totals = pd.DataFrame({"criterion": seen["criterion"].to_numpy(), "unsettled": unsettled})
    totals = totals.groupby("criterion", sort=False)["unsettled"].agg(["size", "sum"])
    tie_counts = pd.Series(tied_open).value_counts()
    return {
        crit: GoldCounts(int(row["size"]), int(tie_counts.get(crit, 0)), int(row["sum"]))
        for crit, row in totals.iterrows()
    }


def ties_go(policy: str) -> str:
    """Where a tie's item goes under a gold policy (labeling/gold.py's rule)."""
    if policy == GoldPolicy.ANY_FAIL:
        return "under the any_fail policy each of them is FAIL gold and counts, so the hardest items lean FAIL"
    return "the hardest items wait for a reviewer and are left out of every figure until then"
