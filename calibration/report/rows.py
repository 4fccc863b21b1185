"""The report's rows: one CriterionReport per criterion, composed of its parts (RowParts) and their warnings.

`build_rows` is pure: DataFrames in (as calibration/data/frames.py makes them), frozen rows out. Per criterion it
computes the parts of a row (the judge against gold, the buckets, the human ceiling, the gold counts, the
judge against itself); `compose_row` makes the row of them, holding each part as it is (no copy of its
figures), and its warnings are findings.py's rules. REPORT_COLUMNS reads the report's keys from the parts.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from calibration.data.frame_reading import current_verdicts
from calibration.report.ceiling import (
    SelfAgreement,
    categorical,
    human_ceiling,
    quotes_outside_response,
    self_agreement,
)
from calibration.report.findings import findings
from calibration.report.gold_counts import GoldCounts, gold_counts_by_criterion
from calibration.report.row_parts import Counts, RowParts, bucket_counts, judge_agreements
from calibration.stats.metrics import (
    Agreement,
    Finding,
    HumanAgreement,
    Rates,
    classification_rates,
    cohen_agreement,
    tier_for,
)
from evals.models import GoldPolicy
from labeling.gold import KEY, derive_gold


@dataclass(frozen=True)
class CriterionReport:
    """One criterion's row, made of the parts build_rows computes (see compose_row): the judge against gold
    (`judge`, with its classification `rates`), the `buckets` every item lands in, the `gold` counts, the
    `human` ceiling and the judge against itself (`self_agreement`), plus what is the row's own. The report's
    keys (REPORT_KEYS) are read from these parts through REPORT_COLUMNS."""

    criterion: str
    gold_policy: str
    judge: Agreement
    rates: Rates
    buckets: Counts
    gold: GoldCounts
    human: HumanAgreement
    human_quotes_outside_response: int
    self_agreement: SelfAgreement
    tier: str
    warnings: tuple[Finding, ...]
    # Not part of the JSON: for pages and approvals.
    criterion_id: int = field(default=0, compare=False)
    gating: bool = field(default=False, compare=False)

    def as_dict(self) -> dict:
        out = {}
        for key, part, attribute in REPORT_COLUMNS:
            value = getattr(getattr(self, part) if part else self, attribute)
            if key.endswith("_ci"):
                value = list(value) if value is not None else None
            elif key == "warnings":
                value = [w.as_dict() for w in value]
            out[key] = value
        return out

    @property
    def in_words(self) -> str:
        """The judge's TNR and TPR as a lead says them (PASS is the positive class)."""
        j, r = self.judge, self.rates
        if j.n == 0:
            return "no data"
        failures = j.true_fail + j.false_pass
        good = j.true_pass + j.false_fail
        parts = [
            f"catches {_pct(r.tnr)} of failures ({j.true_fail} of {failures})" if failures else "no failures to catch",
            f"passes {_pct(r.tpr)} of good outputs ({j.true_pass} of {good})" if good else "no good outputs",
        ]
        return ", ".join(parts)

    @property
    def warning_codes(self) -> list[str]:
        return [w.code for w in self.warnings]

    @property
    def judge_items(self) -> int:
        """Every item with a current verdict of this judge."""
        b = self.buckets
        return self.judge.n + b.judge_error + b.judge_abstain + b.not_applicable + b.pending_gold


# The report's keys of one criterion (the JSON keys and, with each interval split in two, the CSV's columns),
# in this order, each read from one part of the row: key -> (part, its attribute). "" is the row itself.
REPORT_COLUMNS: tuple[tuple[str, str, str], ...] = (
    ("criterion", "", "criterion"),
    ("gold_policy", "", "gold_policy"),
    ("n", "judge", "n"),
    ("kappa", "judge", "kappa"),
    ("kappa_ci", "judge", "kappa_ci"),
    ("observed_agreement", "judge", "observed_agreement"),
    ("expected_agreement", "judge", "expected_agreement"),
    ("gold_pass_rate", "judge", "reference_pass_rate"),
    ("judge_pass_rate", "judge", "rater_pass_rate"),
    ("true_pass", "judge", "true_pass"),
    ("false_pass", "judge", "false_pass"),
    ("true_fail", "judge", "true_fail"),
    ("false_fail", "judge", "false_fail"),
    ("tpr", "rates", "tpr"),
    ("tpr_ci", "rates", "tpr_ci"),
    ("tnr", "rates", "tnr"),
    ("tnr_ci", "rates", "tnr_ci"),
    ("balanced_accuracy", "rates", "balanced_accuracy"),
    ("balanced_accuracy_ci", "rates", "balanced_accuracy_ci"),
    ("f1", "rates", "f1"),
    ("f1_ci", "rates", "f1_ci"),
    ("judge_error", "buckets", "judge_error"),
    ("judge_abstain", "buckets", "judge_abstain"),
    ("not_applicable", "buckets", "not_applicable"),
    ("pending_gold", "buckets", "pending_gold"),
    ("evidence_not_found", "buckets", "evidence_not_found"),
    ("labeled_items", "gold", "labeled_items"),
    ("gold_ties", "gold", "gold_ties"),
    ("awaiting_gold", "gold", "awaiting_gold"),
    ("human_kappa", "human", "kappa"),
    ("human_kappa_ci", "human", "kappa_ci"),
    ("human_n", "human", "n"),
    ("human_alpha", "human", "alpha"),
    ("human_alpha_ci", "human", "alpha_ci"),
    ("human_pairwise_kappa", "human", "pairwise_kappa"),
    ("human_pairwise_kappa_ci", "human", "pairwise_kappa_ci"),
    ("human_pairs", "human", "pairs"),
    ("human_pairs_undefined", "human", "pairs_undefined"),
    ("human_pair_median_items", "human", "pair_median_items"),
    ("human_items_over_two", "human", "over_two"),
    ("human_ceiling", "human", "ceiling_value"),
    ("human_ceiling_ci", "human", "ceiling_ci"),
    ("human_ceiling_source", "human", "ceiling_source"),
    ("human_quotes_outside_response", "", "human_quotes_outside_response"),
    ("judge_samples", "self_agreement", "samples"),
    ("judge_self_alpha", "self_agreement", "alpha"),
    ("judge_self_alpha_ci", "self_agreement", "alpha_ci"),
    ("judge_self_n", "self_agreement", "n"),
    ("tier", "", "tier"),
    ("warnings", "", "warnings"),
)

# Exactly the keys of one criterion in the JSON report, in this order (docs/calibration.md lists them).
REPORT_KEYS = tuple(key for key, _, _ in REPORT_COLUMNS)


def _pct(x: float | None) -> str:
    return "n/a" if x is None else f"{100 * x:.0f}%"


def compose_row(parts: RowParts, criterion_id: int = 0) -> CriterionReport:
    """A criterion's row, composed of its parts."""
    a = parts.agreement
    return CriterionReport(
        criterion=parts.key,
        gold_policy=parts.policy,
        judge=a,
        rates=classification_rates(a.true_pass, a.false_pass, a.false_fail, a.true_fail),
        buckets=parts.counts,
        gold=parts.gold,
        human=parts.human,
        human_quotes_outside_response=parts.quotes_outside_response,
        self_agreement=parts.judge_self,
        tier=tier_for(a.kappa, a.n),
        warnings=findings(parts),
        criterion_id=criterion_id,
        gating=parts.gating,
    )


def build_tiers(
    *,
    criteria: Iterable[tuple[object, str]],
    labels: pd.DataFrame,
    adjudicated: pd.DataFrame,
    verdicts: pd.DataFrame,
    gold_policies: Mapping[Any, str] | None = None,
) -> dict[str, str]:
    """Pure: each criterion's tier, as build_rows computes it (the same gold, current verdicts and kappa), without
    the rest of the row (the human ceiling, the gold counts, the judge's self-agreement)."""
    labels, adjudicated, verdicts = (categorical(df) for df in (labels, adjudicated, verdicts))
    gold = derive_gold(labels, adjudicated, gold_policies or {})
    agreements = judge_agreements(current_verdicts(verdicts).merge(gold, on=KEY, how="outer"))
    empty = cohen_agreement(np.array([]), np.array([]))
    return {key: tier_for(a.kappa, a.n) for crit_id, key in criteria for a in [agreements.get(crit_id, empty)]}


def build_rows(
    *,
    criteria: Iterable[tuple[object, str]],
    labels: pd.DataFrame,
    adjudicated: pd.DataFrame,
    verdicts: pd.DataFrame,
    gating: Iterable[str] = (),
    gold_policies: Mapping[Any, str] | None = None,
) -> list[CriterionReport]:
    """One report row per criterion, in the order given. Pure: frames as frames.py makes them;
    `gold_policies` maps criterion id -> gold policy (majority where missing)."""
    gating = set(gating)
    gold_policies = gold_policies or {}
    # Outcomes as categoricals: grouping and comparing hundreds of thousands of strings is the slow
    # part otherwise, and the vocabulary is fixed.
    labels, adjudicated, verdicts = (categorical(df) for df in (labels, adjudicated, verdicts))
    gold = derive_gold(labels, adjudicated, gold_policies)
    gold_counts = gold_counts_by_criterion(labels, adjudicated, gold)
    items = current_verdicts(verdicts).merge(gold, on=KEY, how="outer")
    counts = bucket_counts(items)
    agreements = judge_agreements(items)
    # The same labels give the same ceiling whatever the judge: computed once per content (Compare's two sides).
    humans = human_ceiling(labels)
    outside = quotes_outside_response(labels)
    selves = self_agreement(verdicts)
    rows = []
    for crit_id, key in criteria:
        parts = RowParts(
            key=key,
            policy=str(gold_policies.get(crit_id, GoldPolicy.MAJORITY)),
            gating=key in gating,
            agreement=agreements.get(crit_id) or cohen_agreement(np.array([]), np.array([])),
            counts=counts.get(crit_id, Counts()),
            human=humans.get(crit_id, HumanAgreement(0, None, None, None)),
            gold=gold_counts.get(crit_id, GoldCounts()),
            judge_self=selves.get(crit_id, SelfAgreement()),
            quotes_outside_response=int(outside.get(crit_id, 0)),
        )
        rows.append(compose_row(parts, int(crit_id) if isinstance(crit_id, int | np.integer) else 0))
    return rows
