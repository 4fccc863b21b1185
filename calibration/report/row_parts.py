"""The parts of one criterion's row, as build_rows computes them (RowParts): the judge against gold, the buckets
every item lands in, the human ceiling, the gold counts and the judge against itself. A row is made of its
parts (rows.py), and its warnings are rules over them (findings.py).

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

from dataclasses import dataclass

import pandas as pd

from calibration.report.ceiling import SelfAgreement
from calibration.report.gold_counts import GoldCounts
from calibration.stats.metrics import (
    ABSTAIN,
    BINARY,
    ERROR,
    NOT_APPLICABLE,
    Agreement,
    HumanAgreement,
    cohen_agreement,
)


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


@dataclass(frozen=True)
class Counts:
    judge_error: int = 0
    judge_abstain: int = 0
    not_applicable: int = 0
    pending_gold: int = 0
    evidence_not_found: int = 0
    no_verdict: int = 0


def bucket_counts(items: pd.DataFrame) -> dict[object, Counts]:
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


def judge_agreements(items: pd.DataFrame) -> dict[object, Agreement]:
    """Judge vs gold per criterion, over the items where both said PASS or FAIL."""
    compared = items[items["judge"].isin(BINARY) & items["gold"].isin(BINARY)]
    return {crit: cohen_agreement(g["judge"], g["gold"]) for crit, g in compared.groupby("criterion", sort=False)}
