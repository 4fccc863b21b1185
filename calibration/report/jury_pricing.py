"""The price of gating with a jury (issue 38): what a uniform audit would cost with the other judge configs that
graded this calibration as its extra signals, beside what it costs with the judge alone.

A lead starting a uniform plan may add up to MAX_EXTRA_JUDGES other configs of the workspace with verdicts on the
candidate (calibration/audits/plan_signals.py); their vote shares join the judge's own as the audit's control
variates. The report prices that jury the way it prices the judge: at the jury's correlation with gold on this
calibration, here cross-validated (calibration/stats/jury_fit.py), since the in-sample R of a fit with several
slopes on a few dozen items flatters every config added.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
import pandas as pd

from calibration.audits.plan_signals import MAX_EXTRA_JUDGES
from calibration.report.pricing import binary_gold, vote_share_frame
from calibration.stats.jury_fit import JuryFit, cross_validated_r, informative


def jury_fits(
    *,
    labels: pd.DataFrame,
    adjudicated: pd.DataFrame,
    verdicts: pd.DataFrame,
    others: pd.DataFrame,
    criteria: Sequence[tuple[Any, str]],
    policies: Mapping[Any, str],
    limit: int = MAX_EXTRA_JUDGES,
) -> dict[str, JuryFit]:
    """Per criterion key where other judge configs have usable verdicts on the items with gold and the judge's vote
    share: the jury of the judge's vote share and up to `limit` of theirs (each config's share of PASS among its
    current samples: its verdict for a config that samples once), and its cross-validated R with gold.

    `others`: frames.load_other_verdicts (with `config`). Which configs, where more than `limit` have verdicts: those
    that graded the most of these items, then by name; a choice that never reads gold, so the cross-validated R is
    not flattered by picking the configs that happened to fit it best. A config's missing value on an item is its
    mean over the items where it has one, computed from the signals alone, as the audit imputes (audit_predictor).
    A config constant on these items predicts nothing and is left out. Left out: criteria without another config, or
    where R is undefined (jury_fit.cross_validated_r)."""
    if not len(others) or not len(verdicts):
        return {}
    own = binary_gold(labels, adjudicated, policies).merge(vote_share_frame(verdicts), on=["criterion", "output"])
    theirs = vote_share_frame(others, by=("config",))
    fits = {}
    for criterion_id, key in criteria:
        items = own[own["criterion"] == criterion_id].sort_values("output")
        mine = theirs[(theirs["criterion"] == criterion_id) & theirs["output"].isin(items["output"])]
        if not len(mine):
            continue
        wide = mine.pivot(index="output", columns="config", values="share").reindex(items["output"])
        wide = wide.fillna(wide.mean())
        wide = wide.loc[:, informative(wide.to_numpy())]
        coverage = mine.groupby("config").size()
        chosen = sorted(wide.columns, key=lambda c: (-int(coverage[c]), str(c)))[:limit]
        if not chosen:
            continue
        signals = np.column_stack([items["share"].to_numpy(dtype=float), wide[chosen].to_numpy(dtype=float)])
        R = cross_validated_r(items["y"].to_numpy(dtype=float), signals)
        if R is not None:
            fits[key] = JuryFit(tuple(str(c) for c in chosen), R, len(items))
    return fits
