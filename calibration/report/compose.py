"""The calibration report: per criterion, how well a judge config agrees with gold, beside the
human ceiling, with every excluded item counted and every degenerate case said out loud.

`build_rows` is pure (DataFrames in, frozen rows out); `calibration_report` and `human_agreement`
load the frames through `calibration/data/frames.py` with a constant number of queries. Per criterion it
computes the parts of a row (RowParts: the judge against gold, the buckets, the human ceiling, the gold
counts, the judge against itself); `compose_row` makes the row of them, and its warnings are the table
FINDINGS of small pure rules, one per warning code.

Which items count where (each item, one output x one criterion, lands in exactly one bucket, so
n + judge_error + judge_abstain + not_applicable + pending_gold + no verdict = every item seen):
  judge_error / judge_abstain  the judge's current verdict is ERROR / ABSTAIN, whatever the gold
  not_applicable               the judge said N/A, or the judge said PASS/FAIL and gold is N/A
  pending_gold                 the judge said PASS/FAIL and there is no PASS/FAIL/N/A gold yet
                               (fewer than two labels, a split without adjudication, or "can't tell")
  n                            judge PASS/FAIL and gold PASS/FAIL: the items kappa is computed on
  (no verdict)                 gold or labels but no verdict from this judge: a warning, not a key
evidence_not_found is a flag, not a bucket: verdicts whose quote is not in the transcript. They
stay in kappa because the gate counts those verdicts too; calibrating without them would measure
a kinder instrument than the one that gates.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass, field, fields
from datetime import datetime
from typing import Any

import numpy as np
import pandas as pd
from django.db.models import Count
from django.utils import timezone

from calibration.audits.figures import plan_figures
from calibration.audits.plans import plans_to_report
from calibration.data import content_cache, frames
from calibration.data.frame_reading import (
    KEY,
    annotator_pair_cells,
    binary_value_counts,
    current_verdicts,
    items_over_two,
    judge_sample_counts,
    two_annotator_pairs,
)
from calibration.data.holdout import report_restriction
from calibration.report.robustness import probe_results, report_key
from calibration.stats.audit_stats import GatingPrice, gating_price
from calibration.stats.candidate_evidence import TransportTest, calibration_cells, transport_test
from calibration.stats.metrics import (
    ABSTAIN,
    BINARY,
    ERROR,
    GATE_MIN_KAPPA,
    HUMAN_MIN_KAPPA,
    JUDGE_SELF_MIN_ALPHA,
    MAX_UNSETTLED_SHARE,
    MIN_N,
    NOT_APPLICABLE,
    PAIR_MIN_ITEMS,
    PASS,
    Agreement,
    Finding,
    HumanAgreement,
    PairwiseKappa,
    bootstrap_alpha_ci,
    classification_rates,
    cohen_agreement,
    fmt,
    krippendorff_alpha_nominal,
    mean_pairwise_kappa,
    tier_for,
)
from calibration.stats.policy import DEFAULT_MIN_PASS_RATE
from evals.models import Criterion, EvalSet, GoldPolicy, RubricVersion
from judging.models import JudgeConfig
from judging.probes.results import ProbeResults
from labeling.gold import derive_gold, tied_items

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


@dataclass(frozen=True)
class Counts:
    judge_error: int = 0
    judge_abstain: int = 0
    not_applicable: int = 0
    pending_gold: int = 0
    evidence_not_found: int = 0
    no_verdict: int = 0


def _bucket_counts(items: pd.DataFrame) -> dict[object, Counts]:
    """Count each item's bucket per criterion (see the module docstring for the buckets)."""
    judge, gold = items["judge"], items["gold"]
    judge_binary = judge.isin(BINARY)
    flags = pd.DataFrame(
        {
            "criterion": items["criterion"],
            "judge_error": judge.eq(ERROR),
            "judge_abstain": judge.eq(ABSTAIN),
            "not_applicable": judge.eq(NOT_APPLICABLE) | (judge_binary & gold.eq(NOT_APPLICABLE)),
            "pending_gold": judge_binary & ~gold.isin(BINARY + (NOT_APPLICABLE,)),
            "evidence_not_found": items["evidence_not_found"].eq(True),  # NaN (no verdict) is not a flag
            "no_verdict": judge.isna(),
        }
    )
    sums = flags.groupby("criterion", sort=False).sum()
    return {crit: Counts(**{k: int(v) for k, v in row.items()}) for crit, row in sums.iterrows()}


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


def _quotes_outside_response(labels: pd.DataFrame) -> pd.Series:
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
    found = human_ceiling(_categorical(labels))
    empty = HumanAgreement(0, None, None, None)
    return {key: found.get(crit_id, empty) for crit_id, key in criteria}


OUTCOME_CATEGORIES = pd.CategoricalDtype([PASS, "FAIL", NOT_APPLICABLE, ABSTAIN, ERROR])


def _categorical(df: pd.DataFrame) -> pd.DataFrame:
    if "outcome" not in df.columns or isinstance(df["outcome"].dtype, pd.CategoricalDtype):
        return df
    return df.assign(outcome=df["outcome"].astype(OUTCOME_CATEGORIES))


@dataclass(frozen=True)
class SelfAgreement:
    """The judge against itself over repeated samples: the most samples an item has, Krippendorff's
    alpha over its PASS/FAIL samples with a bootstrap interval over items, and the items with at least
    two PASS/FAIL samples (the ones alpha can pair)."""

    samples: int = 0
    alpha: float | None = None
    alpha_ci: tuple[float, float] | None = None
    n: int = 0


def _self_agreement(verdicts: pd.DataFrame) -> dict[object, SelfAgreement]:
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


@dataclass(frozen=True)
class GoldCounts:
    """How much of what people labeled has gold: items with a label or an adjudication, items whose
    labels tie (no adjudication), and items without PASS/FAIL/N/A gold yet (any reason)."""

    labeled_items: int = 0
    gold_ties: int = 0
    awaiting_gold: int = 0


def _gold_counts(labels: pd.DataFrame, adjudicated: pd.DataFrame, gold: pd.DataFrame) -> dict[object, GoldCounts]:
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


def _ties_go(policy: str) -> str:
    """Where a tie's item goes under a gold policy (labeling/gold.py's rule)."""
    if policy == GoldPolicy.ANY_FAIL:
        return "under the any_fail policy each of them is FAIL gold and counts, so the hardest items lean FAIL"
    return "the hardest items wait for a reviewer and are left out of every figure until then"


# --- One row: its parts, its warnings, the row ----------------------------------------------------------


@dataclass(frozen=True)
class RowParts:
    """What build_rows computes for one criterion, from which its row and its warnings are made."""

    key: str
    policy: str  # the criterion's gold policy
    gating: bool
    agreement: Agreement  # the judge against gold
    counts: Counts
    human: HumanAgreement
    gold: GoldCounts
    judge_self: SelfAgreement
    quotes_outside_response: int = 0


def _plural(n: int, one: str = "", many: str = "s") -> str:
    return one if n == 1 else many


# Each rule: a pure function of a row's parts that returns its warning, or None. FINDINGS lists them in the
# order the warnings are shown; docs/calibration.md describes every code.


def no_data(p: RowParts) -> Finding | None:
    if p.agreement.n:
        return None
    return Finding("no_data", "no data: no item has both a PASS/FAIL gold label and a PASS/FAIL verdict")


def kappa_undefined(p: RowParts) -> Finding | None:
    a = p.agreement
    if not a.n or a.kappa is not None:
        return None
    outcome = PASS if a.true_pass == a.n else "FAIL"
    return Finding(
        "kappa_undefined",
        f"kappa is undefined: judge and gold both said {outcome} on all {a.n} items, so chance agreement "
        "is 1 and there is nothing to correct for; add items where the other outcome is right",
    )


def _constant(a: Agreement, pass_rate: float | None) -> str | None:
    """The one outcome a side (the judge's or gold's `pass_rate`) gave on every compared item, when kappa is
    defined; else None."""
    if not a.n or a.kappa is None or pass_rate not in (0.0, 1.0):
        return None
    return PASS if pass_rate == 1.0 else "FAIL"


def constant_judge(p: RowParts) -> Finding | None:
    a = p.agreement
    outcome = _constant(a, a.rater_pass_rate)
    if outcome is None:
        return None
    return Finding(
        "constant_judge",
        f"the judge said {outcome} on every one of the {a.n} items: a constant cannot discriminate, so "
        f"kappa is exactly 0 however high its raw agreement ({fmt(a.observed_agreement, 2)})",
    )


def constant_gold(p: RowParts) -> Finding | None:
    a = p.agreement
    outcome = _constant(a, a.reference_pass_rate)
    if outcome is None:
        return None
    other = "FAIL" if outcome == PASS else PASS
    return Finding(
        "constant_gold",
        f"gold is {outcome} on every one of the {a.n} items: with no {other} to find, kappa is 0 whatever "
        f"the judge does; add items that {other.lower()} this criterion",
    )


def false_pass_on_gating(p: RowParts) -> Finding | None:
    false_pass = p.agreement.false_pass
    if not p.gating or false_pass <= 0:
        return None
    return Finding(
        "false_pass_on_gating",
        f"{false_pass} false pass{_plural(false_pass, '', 'es')} on a gating criterion: the judge passed "
        "outputs people failed; read them in the drilldown before trusting this gate",
    )


def degenerate_interval(p: RowParts) -> Finding | None:
    a = p.agreement
    if not a.kappa_ci or a.kappa_ci[0] != a.kappa_ci[1] or a.rater_pass_rate in (0.0, 1.0):
        return None
    return Finding(
        "degenerate_interval",
        f"the interval collapses to {fmt(a.kappa_ci[0])}: every resample of these {a.n} items agrees "
        "the same way, so the bootstrap cannot show the uncertainty that is there; only more items can",
    )


def small_n(p: RowParts) -> Finding | None:
    n = p.agreement.n
    if not 0 < n < MIN_N:
        return None
    return Finding("small_n", f"n = {n} is below the minimum of {MIN_N} compared items for a tier")


def interval_below_gate(p: RowParts) -> Finding | None:
    a = p.agreement
    if tier_for(a.kappa, a.n) != "gate" or not a.kappa_ci or a.kappa_ci[0] >= GATE_MIN_KAPPA:
        return None
    return Finding(
        "interval_below_gate",
        f"the interval's lower end {fmt(a.kappa_ci[0])} is below the gate threshold {GATE_MIN_KAPPA}: "
        "the data are also consistent with a trend-tier judge",
    )


def humans_disagree(p: RowParts) -> Finding | None:
    h = p.human
    name, ceiling, _ = h.ceiling
    if ceiling is None or ceiling >= HUMAN_MIN_KAPPA:
        return None
    pairs = h.pairwise.pairs if h.pairwise else 0
    over = f" over {pairs} annotator pair{_plural(pairs)}" if name != "alpha" and h.pairwise else ""
    return Finding(
        "humans_disagree",
        f"people agree only at {name} {fmt(ceiling, 2)}{over}: gold is noisy; sharpen the criterion's "
        "definition before calibrating a judge on it",
    )


def human_pairs_sparse(p: RowParts) -> Finding | None:
    pairwise = p.human.pairwise
    if pairwise is None or pairwise.kappa is None or not pairwise.sparse:
        return None
    share = (
        f"the {pairwise.pairs} annotator pairs share a median of"
        if pairwise.pairs != 1
        else "the one annotator pair shares"
    )
    return Finding(
        "human_pairs_sparse",
        f"{share} {pairwise.median_items:g} items, fewer than {PAIR_MIN_ITEMS}: each pair's kappa is mostly "
        "noise, so the human ceiling here is alpha",
    )


def human_ab_subset(p: RowParts) -> Finding | None:
    h = p.human
    if not h.over_two:
        return None
    return Finding(
        "human_ab_subset",
        f"annotator A vs B covers only the {h.n} item{_plural(h.n)} exactly two people labeled "
        f"PASS/FAIL; {h.over_two} item{_plural(h.over_two)} with more annotators count in the "
        "mean pairwise kappa and alpha only",
    )


def no_verdict(p: RowParts) -> Finding | None:
    missing = p.counts.no_verdict
    if not missing:
        return None
    return Finding(
        "no_verdict", f"{missing} labeled item{_plural(missing, ' has', 's have')} no verdict from this judge"
    )


def evidence_not_found(p: RowParts) -> Finding | None:
    flagged = p.counts.evidence_not_found
    if not flagged:
        return None
    return Finding(
        "evidence_not_found",
        f"{flagged} verdict{_plural(flagged)} quote text that is not in "
        "the transcript; they still count (the gate uses them), but check them",
    )


def _much_of_labeled(code: str, count: int, labeled: int, what: str, then: str) -> Finding | None:
    """The warning "COUNT of LABELED labeled items WHAT (P%)THEN" when the items are more than
    MAX_UNSETTLED_SHARE of what people labeled (the one threshold of both gold warnings), else None."""
    if not labeled or count / labeled <= MAX_UNSETTLED_SHARE:
        return None
    return Finding(code, f"{count} of {labeled} labeled items {what} ({fmt(100 * count / labeled, 1)}%){then}")


def many_ties(p: RowParts) -> Finding | None:
    g = p.gold
    then = f"; {_ties_go(p.policy)}: adjudicate them, or sharpen the definition"
    return _much_of_labeled("many_ties", g.gold_ties, g.labeled_items, "are ties between annotators", then)


def much_gold_pending(p: RowParts) -> Finding | None:
    g = p.gold
    what = f"have no gold yet under the {p.policy} gold policy"
    then = ": they wait for a second label or a reviewer, and every figure above leaves them out"
    return _much_of_labeled("much_gold_pending", g.awaiting_gold, g.labeled_items, what, then)


def judge_inconsistent(p: RowParts) -> Finding | None:
    me = p.judge_self
    if me.alpha is None or me.alpha >= JUDGE_SELF_MIN_ALPHA:
        return None
    return Finding(
        "judge_inconsistent",
        f"the judge agrees with itself only at alpha {fmt(me.alpha, 2)} over {me.samples} samples of {me.n} items: "
        "a judge that disagrees with itself cannot agree with anyone; fix the prompt or the temperature first",
    )


FINDINGS: tuple[Callable[[RowParts], Finding | None], ...] = (
    # The judge against gold.
    no_data,
    kappa_undefined,
    constant_judge,
    constant_gold,
    false_pass_on_gating,
    degenerate_interval,
    small_n,
    interval_below_gate,
    # The people, and the items.
    humans_disagree,
    human_pairs_sparse,
    human_ab_subset,
    no_verdict,
    evidence_not_found,
    # Gold.
    many_ties,
    much_gold_pending,
    # The judge against itself.
    judge_inconsistent,
)


def findings(parts: RowParts) -> tuple[Finding, ...]:
    """Every warning of a row, in FINDINGS' order."""
    return tuple(found for rule in FINDINGS if (found := rule(parts)) is not None)


# How a part's fields are named in the row, where the names differ (the others are named alike in both).
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


def _agreements(items: pd.DataFrame) -> dict[object, Agreement]:
    """Judge vs gold per criterion, over the items where both said PASS or FAIL."""
    compared = items[items["judge"].isin(BINARY) & items["gold"].isin(BINARY)]
    return {crit: cohen_agreement(g["judge"], g["gold"]) for crit, g in compared.groupby("criterion", sort=False)}


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
    labels, adjudicated, verdicts = (_categorical(df) for df in (labels, adjudicated, verdicts))
    gold = derive_gold(labels, adjudicated, gold_policies or {})
    agreements = _agreements(current_verdicts(verdicts).merge(gold, on=KEY, how="outer"))
    empty = cohen_agreement(np.array([]), np.array([]))
    return {key: tier_for(a.kappa, a.n) for crit_id, key in criteria for a in [agreements.get(crit_id, empty)]}


def criterion_tiers(
    *, eval_set: EvalSet, rubric_version: RubricVersion, judge_config: JudgeConfig, agent_version: str | None = None
) -> dict[str, str]:
    """criterion key -> tier on this calibration, at a fraction of the whole report's cost (Home's check of the
    gating marks), computed once per content like the report's rows."""
    scope = frames.Scope(eval_set, rubric_version, agent_version)
    criteria, policies = _criteria(rubric_version)
    loaded = frames.load_labels(scope), frames.load_adjudicated(scope), frames.load_verdicts(scope, judge_config)
    parts = (criteria, *loaded, sorted((str(k), str(v)) for k, v in policies.items()))
    return content_cache.computed(
        "tiers",
        parts,
        lambda: build_tiers(
            criteria=criteria, labels=loaded[0], adjudicated=loaded[1], verdicts=loaded[2], gold_policies=policies
        ),
    )


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
    labels, adjudicated, verdicts = (_categorical(df) for df in (labels, adjudicated, verdicts))
    gold = derive_gold(labels, adjudicated, gold_policies)
    gold_counts = _gold_counts(labels, adjudicated, gold)
    items = current_verdicts(verdicts).merge(gold, on=KEY, how="outer")
    counts = _bucket_counts(items)
    agreements = _agreements(items)
    # The same labels give the same ceiling whatever the judge: computed once per content (Compare's two sides).
    humans = human_ceiling(labels)
    outside = _quotes_outside_response(labels)
    selves = _self_agreement(verdicts)
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

    def as_dict(self) -> dict:
        if self.price is not None:
            return {**self.price.as_dict(), "candidate": self.candidate}
        return {"criterion": self.criterion, "phi": None, "pass_rate": None, "N": self.N, "labels": None,
                "in_words": self.in_words, "candidate": self.candidate}  # fmt: skip


def price_rows(
    rows: Iterable[CriterionReport], N: int, minimums: Mapping[str, float] | None = None, candidate: str = ""
) -> tuple[PriceRow, ...]:
    """The price of gating each criterion on a candidate of N outputs, from the report's confusion cells, on the
    worse side of its minimum (`minimums`: a gating criterion's, DEFAULT_MIN_PASS_RATE for the others)."""
    minimums = minimums or {}
    return tuple(
        PriceRow(
            r.criterion,
            N,
            gating_price(
                criterion=r.criterion,
                cells=(r.true_pass, r.false_pass, r.false_fail, r.true_fail),
                N=N,
                minimum=minimums.get(r.criterion, DEFAULT_MIN_PASS_RATE),
            ),
            candidate,
        )
        for r in rows
    )


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


# --- Loading and the report objects -------------------------------------------------------------


@dataclass(frozen=True)
class CalibrationReport:
    eval_set: str
    rubric_version: str
    judge_config: str
    judge_config_hash: str
    model_id: str
    agent_version: str | None
    computed_at: datetime
    rows: tuple[CriterionReport, ...]
    # The newest complete probe run of this calibration (calibration/report/robustness.py); None when there is none.
    probes: ProbeResults | None = None
    # The price of gating per criterion in rubric order (None: not computed, as in a report built from frames alone).
    gating_prices: tuple[PriceRow, ...] | None = None
    # The audit plans on this eval set (as a release candidate): AuditFigures.summary of each; none, no key.
    audit_plans: tuple[dict, ...] = ()
    # As a release candidate: each gating criterion marked on another eval set, with the transport test of the
    # judge's rates here against that calibration's (issue 40); none, no key.
    transport: tuple[tuple[str, TransportTest], ...] = ()
    # "held_out" when the judge's examples came from this eval set: the rows measure the held-out split only
    # (calibration/data/holdout.py), and `split_note` says so. "" (and no keys in meta) for every other report.
    split: str = ""
    split_note: str = ""

    def meta(self) -> dict:
        return {
            "eval_set": self.eval_set,
            "rubric_version": self.rubric_version,
            "judge_config": self.judge_config,
            "judge_config_hash": self.judge_config_hash,
            "model_id": self.model_id,
            "agent_version": self.agent_version,
            "computed_at": self.computed_at.isoformat(),
            **({"split": self.split, "split_note": self.split_note} if self.split else {}),
        }

    def as_dict(self) -> dict:
        # The keys of issue 22 come only where there is something to say, so a report without them is as before.
        extra: dict[str, Any] = {}
        if self.gating_prices is not None:
            extra["gating_price"] = [p.as_dict() for p in self.gating_prices]
        if self.audit_plans:
            extra["audit_plans"] = list(self.audit_plans)
        if self.transport:
            extra["transport"] = [{"criterion": key, **t.as_dict()} for key, t in self.transport]
        return {
            **self.meta(),
            "criteria": [r.as_dict() for r in self.rows],
            "probes": report_key(self.probes),
            **extra,
        }

    def row(self, key: str) -> CriterionReport:
        return next(r for r in self.rows if r.criterion == key)


@dataclass(frozen=True)
class Segment:
    agent_version: str
    rows: tuple[CriterionReport, ...]


@dataclass(frozen=True)
class SegmentedReport:
    """One report per agent version, and per criterion the mean of the per-segment kappas."""

    eval_set: str
    rubric_version: str
    judge_config: str
    judge_config_hash: str
    model_id: str
    computed_at: datetime
    segments: tuple[Segment, ...]
    split_note: str = ""  # as CalibrationReport's: set when every segment measures the held-out split only

    def mean_kappas(self) -> dict[str, dict]:
        out: dict[str, dict] = {}
        for seg in self.segments:
            for row in seg.rows:
                entry = out.setdefault(row.criterion, {"kappas": []})
                if row.kappa is not None:
                    entry["kappas"].append(row.kappa)
        return {
            key: {
                "mean_kappa": float(np.mean(v["kappas"])) if v["kappas"] else None,
                "segments_with_kappa": len(v["kappas"]),
                "segments": len(self.segments),
            }
            for key, v in out.items()
        }

    def as_dict(self) -> dict:
        return {
            "eval_set": self.eval_set,
            "rubric_version": self.rubric_version,
            "judge_config": self.judge_config,
            "judge_config_hash": self.judge_config_hash,
            "model_id": self.model_id,
            "computed_at": self.computed_at.isoformat(),
            "by": "agent_version",
            "segments": [
                {"agent_version": s.agent_version, "criteria": [r.as_dict() for r in s.rows]} for s in self.segments
            ],
            "mean_kappa": self.mean_kappas(),
            **({"split": "held_out", "split_note": self.split_note} if self.split_note else {}),
        }


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
                candidate=(r.true_pass, r.false_pass, r.false_fail, r.true_fail),
                level=1.0 - m.confidence,
            ),
        )
        for m in marks
        if m.cells is not None and m.eval_set_id != eval_set_id and (r := by_key.get(m.key)) is not None
    )


def gating_keys(rubric_version: RubricVersion, judge_config: JudgeConfig) -> set[str]:
    from calibration.models import GatingMark

    marks = GatingMark.objects.for_instrument(rubric_version, judge_config)
    return set(marks.values_list("criterion__key", flat=True))


def _criteria(rubric_version: RubricVersion) -> tuple[list[tuple[int, str]], dict[int, str]]:
    """(criterion id, key) in rubric order, and criterion id -> gold policy (one query)."""
    criteria = frames.criteria_of(rubric_version)
    return [(c.id, c.key) for c in criteria], {c.id: c.gold_policy for c in criteria}


def cached_rows(
    *,
    criteria: Sequence[tuple[object, str]],
    labels: pd.DataFrame,
    adjudicated: pd.DataFrame,
    verdicts: pd.DataFrame,
    gating: Iterable[str],
    gold_policies: Mapping[Any, str],
) -> list[CriterionReport]:
    """`build_rows` for these frames, computed once per content (content_cache.py says why that is exact)."""
    gating, policies = sorted(gating), sorted((str(k), str(v)) for k, v in gold_policies.items())
    parts = (criteria, labels, adjudicated, verdicts, gating, policies)
    return content_cache.computed(
        "report-rows",
        parts,
        lambda: build_rows(
            criteria=criteria,
            labels=labels,
            adjudicated=adjudicated,
            verdicts=verdicts,
            gating=gating,
            gold_policies=gold_policies,
        ),
    )


def _only(df: pd.DataFrame, output_ids: frozenset[int] | None) -> pd.DataFrame:
    """The rows of these outputs (all of them when None): a report restricted to a split."""
    return df if output_ids is None else df[df["output"].isin(output_ids)]


def rows_on_outputs(
    *, eval_set: EvalSet, rubric_version: RubricVersion, judge_config: JudgeConfig, output_ids: frozenset[int]
) -> list[CriterionReport]:
    """The report's rows measured on these outputs only (one part of a gold split), whatever the judge's guidance."""
    scope = frames.Scope(eval_set, rubric_version)
    criteria, policies = _criteria(rubric_version)
    return cached_rows(
        criteria=criteria,
        labels=_only(frames.load_labels(scope), output_ids),
        adjudicated=_only(frames.load_adjudicated(scope), output_ids),
        verdicts=_only(frames.load_verdicts(scope, judge_config), output_ids),
        gating=gating_keys(rubric_version, judge_config),
        gold_policies=policies,
    )


def calibration_report(
    *,
    eval_set: EvalSet,
    rubric_version: RubricVersion,
    judge_config: JudgeConfig,
    agent_version: str | None = None,
    with_audit_plans: bool = False,
) -> CalibrationReport:
    """The report for one eval set x rubric version x judge config (five queries, whatever the size, one
    for the newest complete probe run and three more when there is one).

    `with_audit_plans`: also what the report says of the eval set as a release candidate: its audit plans (one
    query, and plan_figures' six and a Monte Carlo forecast for each plan shown), the price of gating for the
    candidate it is about and the transport test of the gating marks' calibrations (up to five queries): what the
    report's page, its JSON export, the command and the API show; the overview grid and the approvals, which read
    only the rows, leave them out."""
    scope = frames.Scope(eval_set, rubric_version, agent_version)
    criteria, policies = _criteria(rubric_version)
    restriction = report_restriction(eval_set=eval_set, rubric_version=rubric_version, judge_config=judge_config)
    only = restriction.output_ids if restriction else None
    verdicts = _only(frames.load_verdicts(scope, judge_config), only)
    rows = cached_rows(
        criteria=criteria,
        labels=_only(frames.load_labels(scope), only),
        adjudicated=_only(frames.load_adjudicated(scope), only),
        verdicts=verdicts,
        gating=gating_keys(rubric_version, judge_config),
        gold_policies=policies,
    )
    prices: tuple[PriceRow, ...] | None = None
    transport: tuple[tuple[str, TransportTest], ...] = ()
    plans: list = []
    if with_audit_plans:
        # The price of gating is about a candidate: this eval set, or the newest one where this is the calibration.
        here = int(verdicts["output"].nunique()) if len(verdicts) else 0
        size, which = priced_candidate(
            eval_set=eval_set, rubric_version=rubric_version, judge_config=judge_config, here=here
        )
        marks = marked_calibrations(rubric_version, judge_config)
        prices = price_rows(rows, size, {m.key: m.min_pass_rate for m in marks}, which)
        transport = transport_rows(rows, marks, eval_set.pk)
        plans = plans_to_report(eval_set=eval_set, rubric_version_id=rubric_version.pk)
    return CalibrationReport(
        split=restriction.part if restriction else "",
        split_note=restriction.note if restriction else "",
        eval_set=eval_set.name,
        rubric_version=rubric_version.ref,
        judge_config=judge_config.name,
        judge_config_hash=judge_config.content_hash,
        model_id=judge_config.model_id,
        agent_version=agent_version,
        computed_at=timezone.now(),
        rows=tuple(rows),
        probes=probe_results(eval_set=eval_set, rubric_version=rubric_version, judge_config=judge_config),
        gating_prices=prices,
        transport=transport,
        audit_plans=tuple(plan_figures(p).summary(is_open=p.closed_at is None) for p in plans),
    )


def segmented_report(*, eval_set: EvalSet, rubric_version: RubricVersion, judge_config: JudgeConfig) -> SegmentedReport:
    """The report split by agent version: the frames are loaded once and cut in memory."""
    scope = frames.Scope(eval_set, rubric_version)
    criteria, policies = _criteria(rubric_version)
    restriction = report_restriction(eval_set=eval_set, rubric_version=rubric_version, judge_config=judge_config)
    only = restriction.output_ids if restriction else None
    labels, adjudicated = _only(frames.load_labels(scope), only), _only(frames.load_adjudicated(scope), only)
    verdicts = _only(frames.load_verdicts(scope, judge_config), only)
    versions = frames.load_agent_versions(scope)
    gating = gating_keys(rubric_version, judge_config)
    segments = []
    for version, outputs in versions.groupby("agent_version", sort=True):
        ids = set(outputs["output"])

        def cut(df: pd.DataFrame, ids: set = ids) -> pd.DataFrame:
            return df[df["output"].isin(ids)]

        rows = cached_rows(
            criteria=criteria,
            labels=cut(labels),
            adjudicated=cut(adjudicated),
            verdicts=cut(verdicts),
            gating=gating,
            gold_policies=policies,
        )
        segments.append(Segment(str(version), tuple(rows)))
    return SegmentedReport(
        eval_set=eval_set.name,
        rubric_version=rubric_version.ref,
        judge_config=judge_config.name,
        judge_config_hash=judge_config.content_hash,
        model_id=judge_config.model_id,
        computed_at=timezone.now(),
        segments=tuple(segments),
        split_note=restriction.note if restriction else "",
    )


def human_agreement(
    *, eval_set: EvalSet | int, rubric_version: RubricVersion | int, agent_version: str | None = None
) -> dict[str, HumanAgreement]:
    """The human ceiling per criterion key, with no judge involved (for progress pages).

    HumanAgreement (metrics.py): the order-free ceiling, the mean pairwise Cohen's kappa over every
    pair of annotators who labeled the same items and Krippendorff's alpha (nominal) over every
    PASS/FAIL annotation, each with a 95% percentile bootstrap over items; and annotator A vs B over
    the items exactly two people labeled PASS/FAIL. None where undefined. Two queries.
    """
    if not isinstance(eval_set, EvalSet):
        eval_set = EvalSet.objects.get(pk=eval_set)
    if not isinstance(rubric_version, RubricVersion):
        rubric_version = RubricVersion.objects.get(pk=rubric_version)
    labels = frames.load_labels(frames.Scope(eval_set, rubric_version, agent_version))
    criteria = Criterion.objects.filter(rubric_version=rubric_version).order_by("order", "id").values_list("id", "key")
    return human_agreement_from_labels(labels, list(criteria))
