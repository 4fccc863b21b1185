"""How stored labels and verdicts are read: the current verdict, annotator positions and pairs.

Pure pandas, no queries. The stored rows are parts (one label per annotator, one verdict per
sample and run); these functions aggregate them at read time, so a different rule never needs
a re-run. The samples' majority is judging/sample_majority.py's, the rule the judge's pages use.
Frames use the column names `calibration/data/frames.py` produces:

labels:      output, criterion, annotation, annotator, slot, outcome   (current labels of submitted annotations)
adjudicated: output, criterion, outcome                     (current adjudicated gold labels)
verdicts:    output, criterion, run_rank, sample, outcome, evidence_found
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from judging.sample_majority import majority
from labeling.gold import KEY

from calibration.stats.metrics import BINARY, PASS

# Gold is read by the one rule of labeling/gold.py (derive_gold): calibration imports labeling, never
# the other way round.


def current_verdicts(verdicts: pd.DataFrame) -> pd.DataFrame:
    """The judge's verdict per (criterion, output) from its stored samples.

    Each (output, criterion, sample) is taken from the most recent run that has it (the lowest
    `run_rank`, the negated run id); the samples' verdict is their majority (judging/sample_majority.py:
    a tie is ABSTAIN), and
    `judge_agreement` the share of samples that gave it. `evidence_not_found` flags a verdict whose
    quote, in a sample giving that outcome, is not in the transcript (never a tie: no sample gave it).
    Returns criterion, output, judge, judge_agreement, evidence_not_found.
    """
    columns = ["criterion", "output", "judge", "judge_agreement", "evidence_not_found"]
    if not len(verdicts):
        return pd.DataFrame({c: [] for c in columns})
    v = verdicts.sort_values("run_rank", kind="stable").drop_duplicates(KEY + ["sample"], keep="first")
    not_found = v["evidence_found"].astype("boolean").eq(False).fillna(False).to_numpy(dtype=bool)
    if not v.duplicated(KEY).any():
        # One sample per item (the usual judge): majority([outcome]) is that outcome with share 1, so the
        # rule needs no per-item Python call, which on a large calibration set took seconds.
        out = v[KEY + ["outcome"]].rename(columns={"outcome": "judge"})
        return out.assign(judge_agreement=1.0, evidence_not_found=not_found)[columns].reset_index(drop=True)
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


def current_runs(verdicts: pd.DataFrame) -> dict[int, int]:
    """Which runs the current verdict samples come from: run id -> how many samples, by the rule current_verdicts
    reads them by (each (output, criterion, sample) from the most recent run that has it)."""
    if not len(verdicts):
        return {}
    v = verdicts.sort_values("run_rank", kind="stable").drop_duplicates(KEY + ["sample"], keep="first")
    counts = (-v["run_rank"].astype("int64")).value_counts()
    return {int(run): int(n) for run, n in counts.items()}


def judge_sample_counts(verdicts: pd.DataFrame) -> pd.DataFrame:
    """Per (criterion, output): how many of the judge's current samples said PASS and FAIL, and how
    many samples it has (for its self-agreement). Each sample is the one of the most recent run that has
    it, the rule current_verdicts reads verdicts by. Columns criterion, output, samples, PASS, FAIL."""
    columns = ["criterion", "output", "samples", *BINARY]
    if not len(verdicts):
        return pd.DataFrame({c: [] for c in columns})
    v = verdicts.sort_values("run_rank", kind="stable").drop_duplicates(KEY + ["sample"], keep="first")
    v = v.assign(**{o: (v["outcome"] == o).to_numpy() for o in BINARY})
    out = v.groupby(KEY, sort=False).agg(samples=("sample", "size"), **{o: (o, "sum") for o in BINARY})
    return out.reset_index()[columns]


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


def two_annotator_pairs(labels: pd.DataFrame) -> pd.DataFrame:
    """Annotator A vs B where exactly two annotations of an item said PASS or FAIL: columns a, b.

    Items with more PASS/FAIL labels are left out (the mean pairwise kappa and alpha cover them). "A" is the
    lower slot: a position, not a person, so which person is A differs from item to item and the figure still
    moves with the order labels were made or imported in (each rater's pass rate, and so the chance term,
    changes when one item's two labels change places). The order-free ceiling is the mean pairwise kappa or
    alpha; A vs B is shown for reference only (docs/calibration.md has the worked example).
    """
    binary = labels.loc[labels["outcome"].isin(BINARY), KEY + ["slot", "outcome"]]
    two = binary[binary.groupby(KEY, sort=False)["outcome"].transform("size").to_numpy() == 2]
    two = two.sort_values(KEY + ["slot"], kind="stable")
    a = two.drop_duplicates(KEY, keep="first").rename(columns={"outcome": "a"})
    b = two.drop_duplicates(KEY, keep="last").rename(columns={"outcome": "b"})
    return a[KEY + ["a"]].merge(b[KEY + ["b"]], on=KEY, how="inner")[["criterion", "output", "a", "b"]]


def items_over_two(labels: pd.DataFrame) -> pd.Series:
    """Per criterion: items with more than two PASS/FAIL labels (left out of A vs B)."""
    binary = labels[labels["outcome"].isin(BINARY)]
    per_item = binary.groupby(KEY, sort=False, observed=True).size()
    over = per_item[per_item > 2]
    return over.groupby(level="criterion", sort=False, observed=True).size()


def annotator_pair_cells(labels: pd.DataFrame) -> pd.DataFrame:
    """Every pair of annotators (people) who both said PASS or FAIL on an item, with the cell they fill.

    Columns criterion, output, first, second (annotator ids, first < second, so a pair is one pair
    whatever the order of the labels), cell: 0 both PASS, 1 first PASS and second FAIL, 2 first FAIL
    and second PASS, 3 both FAIL (the order metrics.mean_pairwise_kappa reads).
    """
    binary = labels.loc[labels["outcome"].isin(BINARY), KEY + ["annotator", "outcome"]]
    binary = binary.assign(passed=(binary["outcome"] == BINARY[0]).to_numpy())
    left = binary[KEY + ["annotator", "passed"]]
    both = left.merge(left, on=KEY, suffixes=("_1", "_2"))
    both = both[both["annotator_1"].to_numpy() < both["annotator_2"].to_numpy()]
    cell = np.where(both["passed_1"], 0, 2) + np.where(both["passed_2"], 0, 1)
    return pd.DataFrame(
        {
            "criterion": both["criterion"].to_numpy(),
            "output": both["output"].to_numpy(),
            "first": both["annotator_1"].to_numpy(),
            "second": both["annotator_2"].to_numpy(),
            "cell": cell,
        }
    )


def binary_value_counts(labels: pd.DataFrame) -> pd.DataFrame:
    """Per (criterion, output): how many annotations said PASS and how many FAIL (for alpha)."""
    binary = labels[labels["outcome"].isin(BINARY)]
    counts = binary.groupby(KEY + ["outcome"], sort=False).size().unstack("outcome", fill_value=0)
    for outcome in BINARY:
        if outcome not in counts.columns:
            counts[outcome] = 0
    return counts[list(BINARY)].reset_index()


def confusion_cells(current: pd.DataFrame, gold: pd.DataFrame) -> dict[object, tuple[int, int, int, int]]:
    """Per criterion, the judge's (true_pass, false_pass, false_fail, true_fail) against gold: the items where
    both the current verdict (`current_verdicts`) and the gold (labeling.gold.derive_gold) are PASS or FAIL."""
    items = current[KEY + ["judge"]].merge(gold[KEY + ["gold"]], on=KEY, how="inner")
    items = items[items["judge"].isin(BINARY) & items["gold"].isin(BINARY)]
    cells: dict[object, tuple[int, int, int, int]] = {}
    for criterion, rows in items.groupby("criterion", sort=False):
        judge_pass, gold_pass = rows["judge"].eq(PASS), rows["gold"].eq(PASS)
        cells[criterion] = (
            int((judge_pass & gold_pass).sum()),
            int((judge_pass & ~gold_pass).sum()),
            int((~judge_pass & gold_pass).sum()),
            int((~judge_pass & ~gold_pass).sum()),
        )
    return cells
