"""Gold: the one rule the whole product reads it by, and which items wait for a reviewer.

Gold is not stored where the annotators settle it: it is the adjudicated GoldLabel where one is
current, otherwise what the criterion's gold policy makes of the current labels of submitted
annotations. Progress, adjudication, calibration, the gate's calibration and the export all call
`derive_gold` (over frames) or `gold_of_votes` (one item), so they can never disagree about what gold
is. Calibration imports this module, never the other way round.

Pure: frames and values in, frames and values out; no Django, no queries (labeling/gold_loaders.py loads
what it reads), so calibration's pure modules import it without settings (tests/config/test_pure_imports.py).

The gold policy is chosen per criterion in the rubric file and is part of the rubric version's content
(evals.models.GoldPolicy, whose values are MAJORITY, ANY_FAIL and UNANIMOUS here):

  majority   one outcome holds more than half of the labels (N/A and Can't tell count as votes too, so
             PASS, PASS, N/A is PASS but PASS, FAIL, N/A has no gold); for two annotators, their
             agreement. The default.
  any_fail   one FAIL makes gold FAIL (a safety criterion: FaithBench's "any annotator marks a
             hallucination"); without a FAIL, the strict majority.
  unanimous  gold only where every label is the same outcome; everything else waits for adjudication.

Whatever the policy, an adjudication wins, and a lone label is never gold (MIN_LABELS_FOR_MAJORITY).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Mapping
from typing import Any

import numpy as np
import pandas as pd

KEY = ["criterion", "output"]

# A majority needs at least two people. With one label there is no second opinion, and the
# product's promise is blind double labeling, so a lone label stays pending, not gold, whatever the
# gold policy (a lone FAIL under any_fail too: the second annotator still labels blind).
MIN_LABELS_FOR_MAJORITY = 2

FAIL = "FAIL"
# The values of evals.models.GoldPolicy, written out: the models cannot be imported without Django
# (tests/config/test_pure_imports.py checks that the two agree).
MAJORITY, ANY_FAIL, UNANIMOUS = "majority", "any_fail", "unanimous"
GOLD_COLUMNS = ["criterion", "output", "gold", "gold_source"]

AWAITING = "awaiting"  # fewer than two submitted labels and no adjudication yet
AGREED = "agreed"  # the gold policy settles it from the labels: gold without a reviewer
DISAGREED = "disagreed"  # two or more labels the policy cannot settle, no adjudication: in the adjudication queue
ADJUDICATED = "adjudicated"  # a reviewer decided (in the app or imported)

STATE_COLUMNS = [*KEY, "n_labels", "gold", "gold_source", "state"]


def gold_of_votes(outcomes: Iterable[str], policy: str = MAJORITY) -> str | None:
    """The gold outcome the labels of one item give under `policy`, else None (it needs a reviewer).

    The rule written out for one item; `derive_gold` applies the same rule to whole frames (the tests
    check that they agree on every combination of up to five labels).
    """
    counts = Counter(outcomes)
    total = sum(counts.values())
    if total < MIN_LABELS_FOR_MAJORITY:
        return None
    if policy == ANY_FAIL and counts[FAIL]:
        return FAIL
    outcome, votes = counts.most_common(1)[0]
    if policy == UNANIMOUS:
        return outcome if votes == total else None
    return outcome if votes * 2 > total else None


def policy_of(criterion: pd.Series, policies: Mapping[Any, str] | None) -> np.ndarray:
    """The gold policy of each row's criterion (majority where none is given)."""
    if not policies:
        return np.full(len(criterion), MAJORITY, dtype=object)
    return criterion.map(policies).fillna(MAJORITY).to_numpy(dtype=object)


def derive_gold(
    labels: pd.DataFrame, adjudicated: pd.DataFrame, policies: Mapping[Any, str] | None = None
) -> pd.DataFrame:
    """Gold per (criterion, output): the adjudicated outcome, else what the criterion's gold policy
    (`policies`: criterion id -> GoldPolicy value; majority where missing) makes of the labels.

    `labels`: criterion, output, outcome (+ anything else); `adjudicated`: criterion, output, outcome.
    Returns criterion, output, gold, gold_source ("adjudicated" or the policy that settled it).
    """
    frames = []
    if len(adjudicated):
        adj = adjudicated[KEY + ["outcome"]].rename(columns={"outcome": "gold"})
        frames.append(adj.assign(gold_source="adjudicated"))
    if len(labels):
        votes = labels.groupby(KEY + ["outcome"], sort=False, observed=True).size().rename("votes").reset_index()
        votes = votes[votes["votes"] > 0]
        by_item = votes.groupby(KEY, sort=False)["votes"]
        total = by_item.transform("sum").to_numpy()
        policy = policy_of(votes["criterion"], policies)
        is_fail = (votes["outcome"] == FAIL).to_numpy()
        has_fail = pd.Series(is_fail, index=votes.index).groupby([votes[k] for k in KEY]).transform("any").to_numpy()
        n = votes["votes"].to_numpy()
        enough = total >= MIN_LABELS_FOR_MAJORITY
        majority = n * 2 > total
        wins = np.select(
            [policy == UNANIMOUS, (policy == ANY_FAIL) & has_fail],
            [n == total, is_fail],
            default=majority,
        )
        winners = votes.loc[enough & wins, KEY + ["outcome"]].assign(gold_source=policy[enough & wins])
        frames.append(winners.rename(columns={"outcome": "gold"}))
    if not frames:
        return pd.DataFrame({c: [] for c in GOLD_COLUMNS})
    # Adjudicated rows come first, so they win over the labels of the same item.
    return pd.concat(frames, ignore_index=True).drop_duplicates(KEY, keep="first").reset_index(drop=True)


def tied_items(labels: pd.DataFrame) -> pd.DataFrame:
    """(criterion, output) of the items whose labels tie: two or more outcomes share the top count (PASS,
    FAIL; or PASS, PASS, FAIL, FAIL), whatever the gold policy."""
    if not len(labels):
        return pd.DataFrame({"criterion": [], "output": []})
    votes = labels.groupby(KEY + ["outcome"], sort=False, observed=True).size().rename("votes").reset_index()
    votes = votes[votes["votes"] > 0]
    top = votes.groupby(KEY, sort=False)["votes"].transform("max").to_numpy()
    leaders = votes.loc[votes["votes"].to_numpy() == top, KEY]
    return leaders[leaders.duplicated(KEY, keep="first")].drop_duplicates(KEY)[KEY].reset_index(drop=True)


def item_states(
    labels: pd.DataFrame, adjudicated: pd.DataFrame, policies: Mapping[Any, str] | None = None
) -> pd.DataFrame:
    """One row per (criterion, output) that has a label or a gold label: its gold and its state.

    `labels`: criterion, output, outcome (+ anything else); `adjudicated`: criterion, output, outcome.
    """
    if not len(labels) and not len(adjudicated):
        return pd.DataFrame({c: [] for c in STATE_COLUMNS})
    counts = labels.groupby(KEY, sort=False).size().rename("n_labels").reset_index()
    gold = derive_gold(labels, adjudicated, policies)
    items = counts.merge(gold, on=KEY, how="outer")
    items["n_labels"] = items["n_labels"].fillna(0).astype("int64")
    source = items["gold_source"].to_numpy(dtype=object)
    items["state"] = np.select(
        [source == "adjudicated", pd.notna(source), items["n_labels"].to_numpy() >= 2],
        [ADJUDICATED, AGREED, DISAGREED],
        default=AWAITING,
    )
    return items[STATE_COLUMNS]
