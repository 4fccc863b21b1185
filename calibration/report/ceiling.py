"""The people's side of a row: the human ceiling (how well people agree with each other on a criterion) and
the judge against itself over repeated samples.

The human ceiling is the same for every judge on the same labels, so it is computed once per content
(`human_ceiling`): the report of every judge, Compare's two sides and the progress page read the same entry.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

import numpy as np
import pandas as pd

from calibration.data import content_cache
from calibration.data.frame_reading import (
    annotator_pair_cells,
    binary_value_counts,
    items_over_two,
    judge_sample_counts,
    two_annotator_pairs,
)
from calibration.stats.metrics import (
    ABSTAIN,
    BINARY,
    ERROR,
    NOT_APPLICABLE,
    PASS,
    HumanAgreement,
    PairwiseKappa,
    bootstrap_alpha_ci,
    cohen_agreement,
    krippendorff_alpha_nominal,
    mean_pairwise_kappa,
)

OUTCOME_CATEGORIES = pd.CategoricalDtype([PASS, "FAIL", NOT_APPLICABLE, ABSTAIN, ERROR])


def categorical(df: pd.DataFrame) -> pd.DataFrame:
    """The frame with its outcomes as categoricals, as build_rows and the human ceiling read it."""
    if "outcome" not in df.columns or isinstance(df["outcome"].dtype, pd.CategoricalDtype):
        return df
    return df.assign(outcome=df["outcome"].astype(OUTCOME_CATEGORIES))


# --- The human ceiling -------------------------------------------------------------------------------------


def _pairwise(labels: pd.DataFrame) -> dict[object, PairwiseKappa]:
    """Mean pairwise kappa per criterion (people as annotators, items as the bootstrap's units)."""
    cells = annotator_pair_cells(labels)
    out = {}
    for crit, g in cells.groupby("criterion", sort=False, observed=True):
        # Sorted codes: the same labels give the same figure to the last digit, whatever their order.
        items = np.unique(g["output"].to_numpy(dtype=np.int64), return_inverse=True)[1]
        first, second = g["first"].to_numpy(dtype=np.int64), g["second"].to_numpy(dtype=np.int64)
        pairs = np.unique(first * (int(second.max()) + 1) + second, return_inverse=True)[1]
        out[crit] = mean_pairwise_kappa(items, pairs, g["cell"].to_numpy())
    return out


def _human(labels: pd.DataFrame) -> dict[object, HumanAgreement]:
    """The human ceiling per criterion: order-free figures (mean pairwise kappa, alpha) and A vs B."""
    out: dict[object, HumanAgreement] = {}
    pairs = two_annotator_pairs(labels)
    agreements = {crit: cohen_agreement(g["a"], g["b"]) for crit, g in pairs.groupby("criterion", sort=False)}
    counts = binary_value_counts(labels)
    alphas = {}
    for crit, g in counts.groupby("criterion", sort=False):
        matrix = g[list(BINARY)].to_numpy()
        alphas[crit] = (krippendorff_alpha_nominal(matrix), bootstrap_alpha_ci(matrix))
    pairwise = _pairwise(labels)
    over_two = items_over_two(labels)
    for crit in set(agreements) | set(alphas) | set(pairwise):
        a = agreements.get(crit)
        alpha, alpha_ci = alphas.get(crit, (None, None))
        out[crit] = HumanAgreement(
            n=a.n if a else 0,
            kappa=a.kappa if a else None,
            kappa_ci=a.kappa_ci if a else None,
            alpha=alpha,
            alpha_ci=alpha_ci if alpha is not None else None,
            pairwise=pairwise.get(crit),
            over_two=int(over_two.get(crit, 0)),
        )
    return out


def quotes_outside_response(labels: pd.DataFrame) -> pd.Series:
    """Per criterion, the people's quotes found only outside the response (stored per label when it was
    written). A frame without the column (a hand-made one) has none."""
    if "quotes_outside_response" not in labels.columns:
        return pd.Series(dtype=np.int64)
    return labels.groupby("criterion", sort=False)["quotes_outside_response"].sum()


def human_ceiling(labels: pd.DataFrame) -> dict[object, HumanAgreement]:
    """`_human` of these labels (outcomes categorical, as build_rows has them), once per content: the report of
    every judge, Compare's two sides and the progress page all read the same entry."""
    return content_cache.computed("human-ceiling", (labels,), lambda: _human(labels))


def human_agreement_from_labels(
    labels: pd.DataFrame, criteria: Iterable[tuple[object, str]]
) -> dict[str, HumanAgreement]:
    found = human_ceiling(categorical(labels))
    empty = HumanAgreement(0, None, None, None)
    return {key: found.get(crit_id, empty) for crit_id, key in criteria}


# --- The judge against itself ------------------------------------------------------------------------------


@dataclass(frozen=True)
class SelfAgreement:
    """The judge against itself over repeated samples: the most samples an item has, Krippendorff's
    alpha over its PASS/FAIL samples with a bootstrap interval over items, and the items with at least
    two PASS/FAIL samples (the ones alpha can pair)."""

    samples: int = 0
    alpha: float | None = None
    alpha_ci: tuple[float, float] | None = None
    n: int = 0


def self_agreement(verdicts: pd.DataFrame) -> dict[object, SelfAgreement]:
    if not len(verdicts):
        return {}
    if verdicts["sample"].nunique() == 1:  # one sample per item (the usual case): nothing to compare
        return {crit: SelfAgreement(1) for crit in verdicts["criterion"].unique()}
    counts = judge_sample_counts(verdicts)
    out = {}
    for crit, g in counts.groupby("criterion", sort=False):
        matrix = g[list(BINARY)].to_numpy(dtype=np.int64)
        samples = int(g["samples"].max())
        if samples < 2:
            out[crit] = SelfAgreement(samples)
            continue
        alpha = krippendorff_alpha_nominal(matrix)
        ci = bootstrap_alpha_ci(matrix) if alpha is not None else None
        out[crit] = SelfAgreement(samples, alpha, ci, int((matrix.sum(axis=1) >= 2).sum()))
    return out
