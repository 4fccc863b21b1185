"""An audit plan's decision, kept when first reached, and read against today's gold (issue 41).

The figures are read from the labels whenever asked (calibration/audits/figures.py), so without a record a gold
correction after a plan decided (a dispute, a reviewer's overrule) would move or undo the decision with no trace,
possibly after the gate passed a release on it. The first read that finds the plan decided at its own thresholds
keeps the decision (models.AuditPlanDecision, claimed once); from then on it is the plan's decision, and a later
gold change is shown beside it with what today's gold reads ("decided PASS at label 20 on 4 Dec 2026; 2 gold
labels changed since; on today's gold it reads FAIL"). The gate, the page, the command, the API and Home all read
it from here.

The computation that can decide keeps: since issue 37 that is the worker's (stored_figures.py), which the pages,
`audit_plan show`, the API and Home read, and the gate's figures of today's gold; so the gate never decides on a
decision that was not kept first.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime

from django.core.exceptions import ObjectDoesNotExist
from django.db import IntegrityError, transaction
from django.utils import timezone

from calibration.models import AuditPlan, AuditPlanDecision
from calibration.stats import audit_stats

GoldPairs = list[list]  # [output id, gold or None], in the plan's order


@dataclass(frozen=True)
class KeptDecision:
    """A plan's kept decision and how today's gold reads against it."""

    decided: str  # PASS or FAIL
    decided_by: str  # "exact" or "test"
    at_label: int
    n_labeled: int  # the labeled prefix read when it was kept
    decided_at: datetime
    min_pass_rate: float
    confidence: float
    design: str
    figures: dict
    gold_digest: str
    # Outputs of that prefix whose gold today differs from the gold the decision read (a pending one settled since
    # counts: a settled item may move the first decision along the order).
    gold_changed: int
    reads_now: str | None  # today's reading at the plan's thresholds: PASS, FAIL or None (not decided)

    @property
    def differs(self) -> bool:
        return self.reads_now != self.decided

    @property
    def since(self) -> str:
        """What today's gold says against it: "2 gold labels changed since; on today's gold it reads FAIL"."""
        if not self.gold_changed and not self.differs:
            return "no gold label changed since"
        changed = f"{self.gold_changed} gold label{'s' if self.gold_changed != 1 else ''} changed since"
        reads = f"still reads {self.decided}" if not self.differs else f"reads {self.reads_now or 'undecided'}"
        return f"{changed}; on today's gold it {reads}"

    @property
    def words(self) -> str:
        """Said the same on the page, by the command, on Home and by the gate."""
        when = timezone.localtime(self.decided_at)
        return f"decided {self.decided} at label {self.at_label} on {when.day} {when:%b %Y}; {self.since}"

    def as_dict(self) -> dict:
        return {
            "decided": self.decided,
            "decided_by": self.decided_by,
            "at_label": self.at_label,
            "n_labeled": self.n_labeled,
            "decided_at": self.decided_at.isoformat(),
            "min_pass_rate": self.min_pass_rate,
            "confidence": self.confidence,
            "design": self.design,
            "figures": self.figures,
            "gold_digest": self.gold_digest,
            "gold_changed": self.gold_changed,
            "reads_now": self.reads_now,
            "differs": self.differs,
            "words": self.words,
        }


def gold_pairs(labeled: Sequence[int], gold: Mapping[int, str]) -> GoldPairs:
    """The gold of each labeled output, in the plan's order (None while pending)."""
    return [[int(output_id), gold.get(output_id)] for output_id in labeled]


def gold_digest(pairs: GoldPairs) -> str:
    """sha256 over the pairs sorted by output id: the same gold state gives the same digest, whatever the order."""
    canonical = json.dumps(sorted((int(o), g) for o, g in pairs), separators=(",", ":"))
    return hashlib.sha256(canonical.encode()).hexdigest()


def stored(plan: AuditPlan) -> AuditPlanDecision | None:
    """The plan's kept decision, if any (no query where the caller selected `kept_decision` with the plan)."""
    try:
        return plan.kept_decision
    except ObjectDoesNotExist:
        return None


def keep(plan: AuditPlan, decision: audit_stats.AuditDecision, pairs: GoldPairs) -> AuditPlanDecision:
    """Keep `decision` (decided, at the plan's thresholds) as the plan's, unless one is kept already: then that one
    stands and is returned. Claimed once by the primary key, so two readers at once keep one decision."""
    assert decision.decided and decision.decided_at and decision.decided_by
    row = AuditPlanDecision(
        plan=plan,
        decided=decision.decided,
        decided_by=decision.decided_by,
        at_label=decision.decided_at,
        n_labeled=decision.n_labeled,
        gold=pairs,
        gold_digest=gold_digest(pairs),
        figures={
            "lower": decision.lower,
            "upper": decision.upper,
            "estimate": decision.estimate.estimate,
            "n_labeled": decision.n_labeled,
            "n_gold": decision.n_gold,
            "n_pending": decision.n_pending,
            "n_not_applicable": decision.n_not_applicable,
            "N": decision.N,
        },
        min_pass_rate=plan.min_pass_rate,
        confidence=plan.confidence,
        design=plan.design,
    )
    try:
        with transaction.atomic():
            row.save(force_insert=True)
    except IntegrityError:
        row = AuditPlanDecision.objects.get(plan=plan)
    plan.kept_decision = row
    return row


def read(row: AuditPlanDecision, gold: Mapping[int, str], reads_now: str | None) -> KeptDecision:
    """The kept decision against today's `gold` (by output) and today's reading at the plan's thresholds."""
    today = gold_pairs([output_id for output_id, _ in row.gold], gold)
    changed = 0 if gold_digest(today) == row.gold_digest else sum(a != b for a, b in zip(row.gold, today, strict=True))
    return KeptDecision(
        decided=row.decided,
        decided_by=row.decided_by,
        at_label=row.at_label,
        n_labeled=row.n_labeled,
        decided_at=row.decided_at,
        min_pass_rate=row.min_pass_rate,
        confidence=row.confidence,
        design=row.design,
        figures=row.figures,
        gold_digest=row.gold_digest,
        gold_changed=changed,
        reads_now=reads_now,
    )
