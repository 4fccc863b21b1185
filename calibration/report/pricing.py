"""What the report says of an eval set as a release candidate, from its rows' confusion cells: the price of
gating each criterion (issue 22, item 8), and the transport test of the judge's rates here against the
calibration each gating mark relied on (issue 40)."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import pandas as pd
from django.db.models import Count

from calibration.report.rows import CriterionReport
from calibration.stats.audit_forecast import GatingPrice, gating_price
from calibration.stats.candidate_evidence import TransportTest, calibration_cells, transport_test
from calibration.stats.jury_fit import JuryFit
from calibration.stats.metrics import FAIL, PASS
from calibration.stats.policy import DEFAULT_MIN_PASS_RATE
from evals.models import EvalSet, RubricVersion
from judging.models import JudgeConfig
from labeling.gold import derive_gold

# --- The price of gating (issue 22, item 8) ----------------------------------------------------------------


@dataclass(frozen=True)
class PriceRow:
    """One criterion's price of gating: the estimate, or why there is none."""

    criterion: str
    N: int
    price: GatingPrice | None
    candidate: str = ""  # which candidate N is the size of, in words

    @property
    def in_words(self) -> str:
        if self.price is None:
            return f"{self.criterion}: no estimate (no items where gold and the judge both say PASS or FAIL)"
        return self.price.in_words

    @property
    def label_cells(self) -> list[tuple[int, int | None]]:
        """Per margin, the judge's labels and the jury's where a jury lowers them (None elsewhere): the page's cells."""
        if self.price is None:
            return []
        jury = self.price.jury.costs if self.price.jury is not None and self.price.jury_lowers else None
        return [(c.labels, jury[k].labels if jury else None) for k, c in enumerate(self.price.costs)]

    def as_dict(self) -> dict:
        if self.price is not None:
            return {**self.price.as_dict(), "candidate": self.candidate}
        return {"criterion": self.criterion, "phi": None, "pass_rate": None, "N": self.N, "labels": None,
                "in_words": self.in_words, "candidate": self.candidate}  # fmt: skip


def price_rows(
    rows: Iterable[CriterionReport],
    N: int,
    minimums: Mapping[str, float] | None = None,
    candidate: str = "",
    vote_share_phis: Mapping[str, float] | None = None,
    jury_fits: Mapping[str, JuryFit] | None = None,
) -> tuple[PriceRow, ...]:
    """The price of gating each criterion on a candidate of N outputs, from the report's confusion cells, on the
    worse side of its minimum (`minimums`: a gating criterion's, DEFAULT_MIN_PASS_RATE for the others).
    `vote_share_phis`: by criterion key, the judge's vote share's correlation with gold where it is known (a judge
    that samples more than once): the predictor a uniform audit reads (issue 38), so the price is that audit's.
    `jury_fits`: by criterion key, the jury of other judge configs with verdicts here (jury_pricing.py), priced
    beside the judge's own price."""
    minimums = minimums or {}
    vote_share_phis = vote_share_phis or {}
    jury_fits = jury_fits or {}
    return tuple(
        PriceRow(
            r.criterion,
            N,
            gating_price(
                criterion=r.criterion,
                cells=(r.judge.true_pass, r.judge.false_pass, r.judge.false_fail, r.judge.true_fail),
                N=N,
                minimum=minimums.get(r.criterion, DEFAULT_MIN_PASS_RATE),
                vote_share_phi=vote_share_phis.get(r.criterion),
                jury=jury_fits.get(r.criterion),
            ),
            candidate,
        )
        for r in rows
    )


def vote_share_phis(
    *,
    labels: pd.DataFrame,
    adjudicated: pd.DataFrame,
    verdicts: pd.DataFrame,
    criteria: Sequence[tuple[Any, str]],
    policies: Mapping[Any, str],
) -> dict[str, float]:
    """Per criterion key: Pearson's r of the judge's vote share (the share of PASS among its current samples, each
    from the most recent run that has it; ERROR, ABSTAIN and N/A are not votes) with gold PASS/FAIL, on the items
    where both exist. Left out where it is undefined (fewer than two items, or either side constant): the price
    then falls back on the verdict's phi."""
    if not len(verdicts):
        return {}
    both = binary_gold(labels, adjudicated, policies).merge(vote_share_frame(verdicts), on=["criterion", "output"])
    phis = {}
    for criterion_id, key in criteria:
        rows = both[both["criterion"] == criterion_id]
        y, share = rows["y"].to_numpy(dtype=float), rows["share"].to_numpy(dtype=float)
        if y.size >= 2 and np.var(y) > 0 and np.var(share) > 0:
            phis[key] = float(np.corrcoef(y, share)[0, 1])
    return phis


def binary_gold(labels: pd.DataFrame, adjudicated: pd.DataFrame, policies: Mapping[Any, str]) -> pd.DataFrame:
    """criterion, output, y: gold as 1.0 (PASS) or 0.0 (FAIL), on the items whose gold is either."""
    gold = derive_gold(labels, adjudicated, policies)
    gold = gold[gold["gold"].isin([PASS, FAIL])]
    return gold.assign(y=(gold["gold"] == PASS).astype(float))[["criterion", "output", "y"]]


def vote_share_frame(verdicts: pd.DataFrame, by: Sequence[str] = ()) -> pd.DataFrame:
    """[*by,] criterion, output, share: the share of PASS among the current samples (each from the most recent run
    that has it; ERROR, ABSTAIN and N/A are not votes), on the items with a usable sample. `by`: further columns
    the samples are told apart by (the config, for other judge configs' verdicts loaded together)."""
    keys = [*by, "criterion", "output"]
    current = verdicts.sort_values("run_rank", kind="stable").drop_duplicates([*keys, "sample"], keep="first")
    votes = current[current["outcome"].isin([PASS, FAIL])]
    return votes.assign(share=(votes["outcome"] == PASS).astype(float)).groupby(keys)["share"].mean().reset_index()


def priced_candidate(
    *, eval_set: EvalSet, rubric_version: RubricVersion, judge_config: JudgeConfig, here: int
) -> tuple[int, str]:
    """The candidate the price of gating is about (issue 40): this eval set, unless it is the calibration a gating
    mark relied on; then the newest candidate gated or audited with this rubric version and judge; without one, a
    candidate the size of this calibration, said so. Two queries at most."""
    from calibration.models import AuditPlan, GateResult, GatingMark

    marks = GatingMark.objects.for_instrument(rubric_version, judge_config)
    if not marks.filter(calibration_eval_set=eval_set).exists():
        return here, "this eval set"
    gated = (
        GateResult.objects.filter(rubric_version=rubric_version, judge_config=judge_config, eval_set__isnull=False)
        .exclude(eval_set=eval_set)
        .values_list("created_at", "eval_set")
        .order_by("-created_at")[:1]
    )
    audited = (
        AuditPlan.objects.filter(criterion__rubric_version=rubric_version, judge_config=judge_config)
        .exclude(eval_set=eval_set)
        .values_list("created_at", "eval_set")
        .order_by("-created_at")[:1]
    )
    newest = max([*gated, *audited], default=None)
    if newest is None:
        return here, "no candidate gated or audited yet: one the size of this calibration"
    candidate = EvalSet.objects.annotate(outputs=Count("cases__outputs")).get(pk=newest[1])
    return int(candidate.outputs), f"{candidate.name}, the newest candidate gated or audited with this judge"


# --- The transport test of the gating marks' calibrations (issue 40) ----------------------------------------


@dataclass(frozen=True)
class MarkedCalibration:
    """What a gating mark relied on, as the report of a candidate reads it: its minimum, its confidence, and the
    calibration's confusion cells (None when the mark holds none)."""

    key: str
    eval_set_id: int
    min_pass_rate: float
    confidence: float
    cells: tuple[int, int, int, int] | None


def marked_calibrations(rubric_version: RubricVersion, judge_config: JudgeConfig) -> list[MarkedCalibration]:
    """The active gating marks of this instrument (one query)."""
    from calibration.models import GatingMark

    marks = GatingMark.objects.for_instrument(rubric_version, judge_config).values_list(
        "criterion__key", "calibration_eval_set_id", "min_pass_rate", "confidence", "figures"
    )
    return [
        MarkedCalibration(key, eval_set_id, minimum, confidence, calibration_cells(figures or {}))
        for key, eval_set_id, minimum, confidence, figures in marks
    ]


def transport_rows(
    rows: Iterable[CriterionReport], marks: Iterable[MarkedCalibration], eval_set_id: int
) -> tuple[tuple[str, TransportTest], ...]:
    """Per gating criterion marked on another eval set: the judge's rates here (a candidate's gold) tested against
    the calibration its mark relied on (candidate_evidence.transport_test, at the mark's confidence)."""
    by_key = {r.criterion: r for r in rows}
    return tuple(
        (
            m.key,
            transport_test(
                calibration=m.cells,
                candidate=(r.judge.true_pass, r.judge.false_pass, r.judge.false_fail, r.judge.true_fail),
                level=1.0 - m.confidence,
            ),
        )
        for m in marks
        if m.cells is not None and m.eval_set_id != eval_set_id and (r := by_key.get(m.key)) is not None
    )
