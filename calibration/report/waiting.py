"""What is already waiting that would add compared items to a calibration: per criterion, disagreements and
disputed gold labels for a reviewer, outputs labeled once or not at all for the annotators, and the labeling
queue that hands them out. Counted over the whole eval set (an agent version filter on the report does not
change who has work to do). A fixed number of queries: item states (two), outputs, disputes, the queue.
"""

from __future__ import annotations

from dataclasses import dataclass

import pandas as pd

from calibration.data.frames import states_of
from evals.models import EvalSet, Output, RubricVersion
from labeling.disputes import open_dispute_counts
from labeling.gold import AWAITING, DISAGREED
from labeling.gold_loaders import gold_policies
from labeling.label_frames import Scope, load_adjudicated, load_labels
from labeling.models import LabelingQueue


@dataclass(frozen=True)
class Waiting:
    disagreements: int  # two labels, no gold: in the adjudication queue
    disputes: int  # gold disputed by a lead or reviewer: back in the adjudication queue
    labeled_once: int  # one submitted label: waits for a second annotator
    unlabeled: int  # no submitted label and no gold yet

    @property
    def for_reviewers(self) -> int:
        return self.disagreements + self.disputes

    @property
    def for_annotators(self) -> int:
        return self.labeled_once + self.unlabeled


@dataclass(frozen=True)
class WaitingWork:
    by_criterion: dict[str, Waiting]
    queue: LabelingQueue | None  # the eval set's current labeling queue, whatever its rubric version
    rubric_version_id: int = 0

    @property
    def queue_is_here(self) -> bool:
        """The labeling queue is open on the report's rubric version (annotators' Next hands the work out)."""
        return self.queue is not None and self.queue.rubric_version_id == self.rubric_version_id

    def of(self, key: str) -> Waiting:
        return self.by_criterion.get(key, Waiting(0, 0, 0, 0))


def waiting_counts(states: pd.DataFrame, criteria: list[tuple[int, str]], outputs: int, disputes) -> dict:
    """Pure: per criterion key, Waiting from the item states (labeling.gold.item_states) and the open
    disputes per key."""
    out = {}
    for crit_id, key in criteria:
        mine = states[states["criterion"] == crit_id] if len(states) else states
        seen = len(mine)  # outputs with a label or a gold label (imported gold needs no labels)
        out[key] = Waiting(
            disagreements=int((mine["state"] == DISAGREED).sum()) if len(mine) else 0,
            disputes=int(disputes.get(key, 0)),
            labeled_once=int(((mine["state"] == AWAITING) & (mine["n_labels"] == 1)).sum()) if len(mine) else 0,
            unlabeled=max(outputs - seen, 0),
        )
    return out


def waiting_work(eval_set: EvalSet, rubric_version: RubricVersion) -> WaitingWork:
    scope = Scope(eval_set, rubric_version)
    labels, adjudicated, policies = load_labels(scope), load_adjudicated(scope), gold_policies(rubric_version)
    states = states_of(labels, adjudicated, policies)
    criteria = list(rubric_version.criteria.order_by("order", "id").values_list("id", "key"))
    outputs = Output.objects.filter(case__eval_set=eval_set).count()
    counts = waiting_counts(states, criteria, outputs, open_dispute_counts(eval_set, rubric_version))
    return with_queue(counts, eval_set, rubric_version)


def with_queue(counts: dict[str, Waiting], eval_set: EvalSet, rubric_version: RubricVersion) -> WaitingWork:
    """The counts (computed now, or by a worker: report/stored_report.py) with the eval set's queue (one query)."""
    queue = LabelingQueue.objects.current().select_related("rubric_version__rubric").filter(eval_set=eval_set).first()
    return WaitingWork(counts, queue, rubric_version.pk)
