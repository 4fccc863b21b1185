"""The annotators' agreement rows of an eval set and rubric version, loaded and computed: for the page of a small
eval set (annotator_figures.py) and for the report's worker, which stores them with a large one's (stored_report.py).
"""

from __future__ import annotations

from collections.abc import Sequence

from calibration.report.annotator_agreement import AnnotatorAgreement, annotator_agreement
from evals.models import Criterion, EvalSet, RubricVersion
from labeling import label_frames


def annotator_rows(
    eval_set: EvalSet, rubric_version: RubricVersion, criteria: Sequence[Criterion] | None = None
) -> tuple[AnnotatorAgreement, ...]:
    """Every annotator's agreement on the eval set, computed from all its labels (two queries, and the criteria's
    when not given)."""
    scope = label_frames.Scope(eval_set, rubric_version)
    criteria = criteria if criteria is not None else list(rubric_version.criteria.order_by("order", "id"))
    return tuple(
        annotator_agreement(
            label_frames.load_labels(scope),
            label_frames.load_adjudicated(scope, with_decider=True),
            {c.pk: c.gold_policy for c in criteria},
        )
    )
