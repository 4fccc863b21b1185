"""The report's rows: one CriterionReport per criterion, composed of its parts (RowParts) and their warnings.

`build_rows` is pure: DataFrames in (as calibration/data/frames.py makes them), frozen rows out. Per criterion it
computes the parts of a row (the judge against gold, the buckets, the human ceiling, the gold counts, the
judge against itself); `compose_row` makes the row of them, and its warnings are findings.py's rules.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import asdict, dataclass, field, fields
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
    Finding,
    HumanAgreement,
    classification_rates,
    cohen_agreement,
    tier_for,
)
from evals.models import GoldPolicy
from labeling.gold import KEY, derive_gold

# A row field that is not part of the report's JSON and CSV, only of the pages and approvals.
PAGES_ONLY = {"exported": False}


@dataclass(frozen=True)
class CriterionReport:
    """One criterion's row. Its fields, in this order, are the report's keys (REPORT_KEYS): the JSON keys of a
    criterion and the CSV's columns (docs/calibration.md lists them), read by the same names on the pages.
    build_rows composes a row of the parts it computes (RowParts); see compose_row."""

    criterion: str
    gold_policy: str
    n: int
    kappa: float | None
    kappa_ci: tuple[float, float] | None
    observed_agreement: float | None
    expected_agreement: float | None
    gold_pass_rate: float | None
    judge_pass_rate: float | None
    true_pass: int
    false_pass: int
    true_fail: int
    false_fail: int
    tpr: float | None
    tpr_ci: tuple[float, float] | None
    tnr: float | None
    tnr_ci: tuple[float, float] | None
    balanced_accuracy: float | None
    balanced_accuracy_ci: tuple[float, float] | None
    f1: float | None
    f1_ci: tuple[float, float] | None
    judge_error: int
    judge_abstain: int
    not_applicable: int
    pending_gold: int
    evidence_not_found: int
    labeled_items: int
    gold_ties: int
    awaiting_gold: int
    human_kappa: float | None
    human_kappa_ci: tuple[float, float] | None
    human_n: int
    human_alpha: float | None
    human_alpha_ci: tuple[float, float] | None
    human_pairwise_kappa: float | None
    human_pairwise_kappa_ci: tuple[float, float] | None
    human_pairs: int
    human_pairs_undefined: int
    human_pair_median_items: float
    human_items_over_two: int
    human_ceiling: float | None
    human_ceiling_ci: tuple[float, float] | None
    human_ceiling_source: str
    human_quotes_outside_response: int
    judge_samples: int
    judge_self_alpha: float | None
    judge_self_alpha_ci: tuple[float, float] | None
    judge_self_n: int
    tier: str
    warnings: tuple[Finding, ...]
    # Not part of the JSON: for pages and approvals.
    criterion_id: int = field(default=0, compare=False, metadata=PAGES_ONLY)
    no_verdict: int = field(default=0, compare=False, metadata=PAGES_ONLY)
    gating: bool = field(default=False, compare=False, metadata=PAGES_ONLY)

    def as_dict(self) -> dict:
        out = {}
        for key in REPORT_KEYS:
            value = getattr(self, key)
            if key.endswith("_ci"):
                value = list(value) if value is not None else None
            elif key == "warnings":
                value = [w.as_dict() for w in value]
            out[key] = value
        return out

    @property
    def in_words(self) -> str:
        """The judge's TNR and TPR as a lead says them (PASS is the positive class)."""
        if self.n == 0:
            return "no data"
        failures = self.true_fail + self.false_pass
        good = self.true_pass + self.false_fail
        parts = [
            f"catches {_pct(self.tnr)} of failures ({self.true_fail} of {failures})"
            if failures
            else "no failures to catch",
            f"passes {_pct(self.tpr)} of good outputs ({self.true_pass} of {good})" if good else "no good outputs",
        ]
        return ", ".join(parts)

    @property
    def warning_codes(self) -> list[str]:
        return [w.code for w in self.warnings]

    @property
    def judge_items(self) -> int:
        """Every item with a current verdict of this judge."""
        return self.n + self.judge_error + self.judge_abstain + self.not_applicable + self.pending_gold


# Exactly the keys of one criterion in the JSON report, in this order: the row's fields, from one list.
REPORT_KEYS = tuple(f.name for f in fields(CriterionReport) if f.metadata.get("exported", True))


def _pct(x: float | None) -> str:
    return "n/a" if x is None else f"{100 * x:.0f}%"


AGREEMENT_NAMES = {"rater_pass_rate": "judge_pass_rate", "reference_pass_rate": "gold_pass_rate"}
HUMAN_NAMES = {
    "n": "human_n",
    "kappa": "human_kappa",
    "kappa_ci": "human_kappa_ci",
    "alpha": "human_alpha",
    "alpha_ci": "human_alpha_ci",
    "over_two": "human_items_over_two",
}
JUDGE_SELF_NAMES = {
    "samples": "judge_samples",
    "alpha": "judge_self_alpha",
    "alpha_ci": "judge_self_alpha_ci",
    "n": "judge_self_n",
}


def _named(part: Any, names: Mapping[str, str] | None = None) -> dict[str, Any]:
    """The row fields one computed part fills: each of its fields under the row's name for it."""
    names = names or {}
    return {names.get(f.name, f.name): getattr(part, f.name) for f in fields(part)}


def _human_fields(h: HumanAgreement) -> dict[str, Any]:
    """The human ceiling's row fields: A vs B, alpha, the mean pairwise kappa and the ceiling they make."""
    own = _named(h, HUMAN_NAMES)
    pairwise = own.pop("pairwise")  # a part of its own: its figures are row fields of their own
    source, ceiling, ceiling_ci = h.ceiling
    return {
        **own,
        "human_pairwise_kappa": h.pairwise_kappa,
        "human_pairwise_kappa_ci": pairwise.kappa_ci if pairwise else None,
        "human_pairs": pairwise.pairs if pairwise else 0,
        "human_pairs_undefined": pairwise.undefined_pairs if pairwise else 0,
        "human_pair_median_items": pairwise.median_items if pairwise else 0.0,
        "human_ceiling": ceiling,
        "human_ceiling_ci": ceiling_ci,
        "human_ceiling_source": source,
    }


def compose_row(parts: RowParts, criterion_id: int = 0) -> CriterionReport:
    """A criterion's row, composed of its parts: each part fills the fields it computes."""
    a = parts.agreement
    return CriterionReport(
        criterion=parts.key,
        gold_policy=parts.policy,
        **_named(a, AGREEMENT_NAMES),
        **asdict(classification_rates(a.true_pass, a.false_pass, a.false_fail, a.true_fail)),
        **_named(parts.counts),
        **_named(parts.gold),
        **_human_fields(parts.human),
        human_quotes_outside_response=parts.quotes_outside_response,
        **_named(parts.judge_self, JUDGE_SELF_NAMES),
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
