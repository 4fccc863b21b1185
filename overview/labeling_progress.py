"""How far labeling has come per eval set and rubric version, with the human-human agreement so far (staff only).

Staff see outputs with 0, 1 and 2 submitted annotations, pending adjudications, gold labels,
and per criterion the human-human agreement so far. The agreement comes from
`calibration.report.human_agreement_from_labels` (the function the report's ceiling uses), fed
with the label frame loaded here once, so the page and the report can never show different ceilings.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass

import pandas as pd
from django.db.models import Count
from django.utils import timezone

from calibration.data.frames import states_of
from calibration.report.ceiling import human_agreement_from_labels
from calibration.stats.metrics import HUMAN_MIN_KAPPA, MIN_N, HumanAgreement
from evals.models import Criterion, EvalSet, HumanOutcome, Output, RubricVersion
from labeling.gold import ADJUDICATED, AGREED, AWAITING, DISAGREED
from labeling.label_frames import Scope, load_adjudicated, load_labels
from labeling.models import Annotation


@dataclass(frozen=True)
class CriterionProgress:
    criterion: Criterion
    awaiting: int
    agreed: int
    pending: int
    adjudicated: int
    gold: dict[str, int]  # gold outcome -> items, in HumanOutcome order
    agreement: HumanAgreement

    @property
    def gold_total(self) -> int:
        return self.agreed + self.adjudicated

    @property
    def few(self) -> bool:
        """Too few items labeled PASS/FAIL by two or more people to read kappa yet (the calibration code's
        minimum n for a tier)."""
        pairwise = self.agreement.pairwise
        return max(self.agreement.n, pairwise.items if pairwise else 0) < MIN_N

    @property
    def noisy(self) -> bool:
        """People disagree too much for this criterion's gold to calibrate a judge against (the order-free
        ceiling the calibration report warns on)."""
        k = self.agreement.ceiling[1]
        return k is not None and k < HUMAN_MIN_KAPPA and not self.few


@dataclass(frozen=True)
class Progress:
    eval_set: EvalSet
    rubric_version: RubricVersion
    n_outputs: int
    by_annotations: dict[int, int]  # 0, 1, 2 (2 = two or more) -> outputs
    drafts_in_progress: int
    pending_adjudications: int
    gold_labels: int
    criteria: list[CriterionProgress]

    @property
    def double_labeled_pct(self) -> float:
        return 100.0 * self.by_annotations[2] / self.n_outputs if self.n_outputs else 0.0

    @property
    def single_labeled_pct(self) -> float:
        return 100.0 * self.by_annotations[1] / self.n_outputs if self.n_outputs else 0.0


def annotation_buckets(n_outputs: int, submitted_per_output: list[int]) -> dict[int, int]:
    """Outputs with 0, 1 and 2+ submitted annotations, from the counts of outputs that have any."""
    counts = Counter(min(n, 2) for n in submitted_per_output)
    return {0: n_outputs - counts[1] - counts[2], 1: counts[1], 2: counts[2]}


def criterion_counts(states: pd.DataFrame, criteria: list[Criterion]) -> dict[int, dict]:
    """Per criterion id: items awaiting a second label, agreed, pending, adjudicated, and gold by outcome."""
    out: dict[int, dict] = {}
    by_state = states.groupby(["criterion", "state"]).size() if len(states) else pd.Series(dtype="int64")
    with_gold = states[states["gold"].notna()] if len(states) else states
    by_gold = with_gold.groupby(["criterion", "gold"]).size() if len(with_gold) else pd.Series(dtype="int64")
    for c in criteria:
        out[c.pk] = {
            "awaiting": int(by_state.get((c.pk, AWAITING), 0)),
            "agreed": int(by_state.get((c.pk, AGREED), 0)),
            "pending": int(by_state.get((c.pk, DISAGREED), 0)),
            "adjudicated": int(by_state.get((c.pk, ADJUDICATED), 0)),
            "gold": {value: int(by_gold.get((c.pk, value), 0)) for value in HumanOutcome.values},
        }
    return out


def progress(eval_set: EvalSet, rubric_version: RubricVersion) -> Progress:
    """Seven queries whatever the number of outputs, labels or criteria."""
    outputs = Output.objects.filter(case__eval_set=eval_set)
    n_outputs = outputs.count()
    annotations = Annotation.objects.filter(rubric_version=rubric_version, output__case__eval_set=eval_set)
    per_output = list(
        annotations.submitted().values("output_id").annotate(n=Count("id")).order_by().values_list("n", flat=True)
    )
    drafts = annotations.filter(status=Annotation.Status.DRAFT, reserved_until__gt=timezone.now()).count()
    scope = Scope(eval_set, rubric_version)
    labels = load_labels(scope)
    criteria = list(Criterion.objects.filter(rubric_version=rubric_version).order_by("order", "id"))
    adjudicated, policies = load_adjudicated(scope), {c.pk: c.gold_policy for c in criteria}
    states = states_of(labels, adjudicated, policies)
    agreement = human_agreement_from_labels(labels, [(c.pk, c.key) for c in criteria])
    counts = criterion_counts(states, criteria)
    rows = [CriterionProgress(criterion=c, agreement=agreement[c.key], **counts[c.pk]) for c in criteria]
    return Progress(
        eval_set=eval_set,
        rubric_version=rubric_version,
        n_outputs=n_outputs,
        by_annotations=annotation_buckets(n_outputs, per_output),
        drafts_in_progress=drafts,
        pending_adjudications=sum(r.pending for r in rows),
        gold_labels=sum(r.gold_total for r in rows),
        criteria=rows,
    )
