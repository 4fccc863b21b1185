"""How stored labels and verdicts are read: gold, the current verdict, annotator positions.

Pure pandas, no queries. The stored rows are parts (one label per annotator, one verdict per
sample and run); these functions aggregate them at read time, so a different rule never needs
a re-run. The samples' majority is judging.reading.majority, the rule the judge's pages use.
Frames use the column names `calibration/data.py` produces:

labels:      output, criterion, annotation, slot, outcome   (current labels of submitted annotations)
adjudicated: output, criterion, outcome                     (current adjudicated gold labels)
verdicts:    output, criterion, run_rank, sample, outcome, evidence_found
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from judging.reading import majority

from .metrics import BINARY

# A majority needs at least two people. With one label there is no second opinion, and the
# product's promise is blind double labeling, so a lone label stays pending, not gold.
MIN_LABELS_FOR_MAJORITY = 2

KEY = ["criterion", "output"]


def derive_gold(labels: pd.DataFrame, adjudicated: pd.DataFrame) -> pd.DataFrame:
    """Gold per (criterion, output): the adjudicated outcome, else the strict majority of labels.

    Strict majority: one outcome holds more than half of the current labels (N/A and Can't tell
    count as votes too, so PASS, PASS, N/A is PASS but PASS, FAIL, N/A has no gold). For two
    annotators that is their agreement. Returns columns criterion, output, gold, gold_source.
    """
    frames = []
    if len(adjudicated):
        adj = adjudicated[KEY + ["outcome"]].rename(columns={"outcome": "gold"})
        frames.append(adj.assign(gold_source="adjudicated"))
    if len(labels):
        votes = labels.groupby(KEY + ["outcome"], sort=False).size().rename("votes").reset_index()
        total = votes.groupby(KEY, sort=False)["votes"].transform("sum")
        winners = votes[(votes["votes"] * 2 > total) & (total >= MIN_LABELS_FOR_MAJORITY)]
        frames.append(winners[KEY + ["outcome"]].rename(columns={"outcome": "gold"}).assign(gold_source="majority"))
    if not frames:
        return pd.DataFrame({"criterion": [], "output": [], "gold": [], "gold_source": []})
    # Adjudicated rows come first, so they win over a majority of the same item.
    return pd.concat(frames, ignore_index=True).drop_duplicates(KEY, keep="first").reset_index(drop=True)


def current_verdicts(verdicts: pd.DataFrame) -> pd.DataFrame:
    """The judge's verdict per (criterion, output) from its stored samples.

    Each (output, criterion, sample) is taken from the most recent run that has it (`run_rank` 0 =
    newest); the samples' verdict is their majority (judging.reading.majority: a tie is ABSTAIN), and
    `judge_agreement` the share of samples that gave it. `evidence_not_found` flags a verdict whose
    quote, in a sample giving that outcome, is not in the transcript (never a tie: no sample gave it).
    Returns criterion, output, judge, judge_agreement, evidence_not_found.
    """
    columns = ["criterion", "output", "judge", "judge_agreement", "evidence_not_found"]
    if not len(verdicts):
        return pd.DataFrame({c: [] for c in columns})
    v = verdicts.sort_values("run_rank", kind="stable").drop_duplicates(KEY + ["sample"], keep="first")
    not_found = v["evidence_found"].astype("boolean").eq(False).fillna(False).to_numpy(dtype=bool)
    samples = (
        v.assign(not_found=not_found)
        .groupby(KEY, sort=False)
        .agg(outcomes=("outcome", list), not_found=("not_found", list))
    )
    verdict = [majority(outcomes) for outcomes in samples["outcomes"]]
    flagged = [
        not m.tie and any(nf for o, nf in zip(outcomes, flags, strict=True) if o == m.outcome)
        for m, outcomes, flags in zip(verdict, samples["outcomes"], samples["not_found"], strict=True)
    ]
    return pd.DataFrame(
        {
            "criterion": samples.index.get_level_values("criterion"),
            "output": samples.index.get_level_values("output"),
            "judge": [m.outcome for m in verdict],
            "judge_agreement": [m.share for m in verdict],
            "evidence_not_found": np.array(flagged, dtype=bool),
        }
    )


def annotator_positions(labels: pd.DataFrame) -> pd.DataFrame:
    """Add `position` (1 = annotator A, 2 = B, ...) to each label.

    Positions are the order of an output's submitted annotations by slot, i.e. the order in which
    they were made or imported; a gap left by a lapsed draft does not shift B into A's place twice.
    """
    if not len(labels):
        return labels.assign(position=pd.Series(dtype="int64"))
    annotations = labels[["output", "annotation", "slot"]].drop_duplicates("annotation")
    ranks = annotations.groupby("output", sort=False)["slot"].rank(method="first").astype("int64")
    position = pd.Series(ranks.to_numpy(), index=annotations["annotation"].to_numpy())
    return labels.assign(position=labels["annotation"].map(position).to_numpy())


def human_pairs(labels: pd.DataFrame) -> pd.DataFrame:
    """Annotator A vs B per (criterion, output), where both said PASS or FAIL: columns a, b."""
    positioned = annotator_positions(labels)
    binary = positioned[positioned["outcome"].isin(BINARY)]
    a = binary.loc[binary["position"] == 1, KEY + ["outcome"]].rename(columns={"outcome": "a"})
    b = binary.loc[binary["position"] == 2, KEY + ["outcome"]].rename(columns={"outcome": "b"})
    return a.merge(b, on=KEY, how="inner")[["criterion", "output", "a", "b"]]


def binary_value_counts(labels: pd.DataFrame) -> pd.DataFrame:
    """Per (criterion, output): how many annotations said PASS and how many FAIL (for alpha)."""
    binary = labels[labels["outcome"].isin(BINARY)]
    counts = binary.groupby(KEY + ["outcome"], sort=False).size().unstack("outcome", fill_value=0)
    for outcome in BINARY:
        if outcome not in counts.columns:
            counts[outcome] = 0
    return counts[list(BINARY)].reset_index()
