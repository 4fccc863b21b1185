"""Effective gold per (output, criterion), and which items wait for a reviewer.

Gold is not stored where the annotators agree: it is the adjudicated GoldLabel
where one is current, otherwise the strict majority of the current labels of
submitted annotations (two annotators: their agreement). The rule itself lives in
`calibration.reading.derive_gold`, so progress, adjudication, calibration and the
export can never disagree about what gold is; this module adds the item states
the labeling pages need. Pure pandas: frames come from `calibration.data`.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from calibration.data import Scope, load_adjudicated, load_labels
from calibration.reading import KEY, derive_gold

AWAITING = "awaiting"  # fewer than two submitted labels and no adjudication yet
AGREED = "agreed"  # a strict majority of the labels: gold without a reviewer
DISAGREED = "disagreed"  # two or more labels, no majority, no adjudication: in the adjudication queue
ADJUDICATED = "adjudicated"  # a reviewer decided (in the app or imported)

STATE_COLUMNS = [*KEY, "n_labels", "gold", "gold_source", "state"]


def item_states(labels: pd.DataFrame, adjudicated: pd.DataFrame) -> pd.DataFrame:
    """One row per (criterion, output) that has a label or a gold label: its gold and its state.

    `labels`: criterion, output, outcome (+ anything else); `adjudicated`: criterion, output, outcome.
    """
    if not len(labels) and not len(adjudicated):
        return pd.DataFrame({c: [] for c in STATE_COLUMNS})
    counts = labels.groupby(KEY, sort=False).size().rename("n_labels").reset_index()
    gold = derive_gold(labels, adjudicated)
    items = counts.merge(gold, on=KEY, how="outer")
    items["n_labels"] = items["n_labels"].fillna(0).astype("int64")
    source = items["gold_source"].to_numpy(dtype=object)
    items["state"] = np.select(
        [source == "adjudicated", source == "majority", items["n_labels"].to_numpy() >= 2],
        [ADJUDICATED, AGREED, DISAGREED],
        default=AWAITING,
    )
    return items[STATE_COLUMNS]


def load_item_states(eval_set, rubric_version) -> pd.DataFrame:
    """Item states of an eval set under one rubric version (two queries)."""
    scope = Scope(eval_set, rubric_version)
    return item_states(load_labels(scope), load_adjudicated(scope))
