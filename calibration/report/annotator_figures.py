"""The annotators' agreement page's figures: computed now on a small eval set, or read from what a worker stored with
a report of the eval set and rubric version (stored_report.py), with how fresh they are.

They depend on the labels and gold only, never on a judge: every stored report of the eval set and rubric version
(over all agent versions) holds the same ones, so the page reads the newest. A large eval set with no stored report
yet gets one asked for (of its first judge config: any judge's report carries them), and the page says a worker is
computing them.
"""

from __future__ import annotations

from dataclasses import dataclass

from django.db.models import F

from calibration.data import frames
from calibration.models import ReportFigures
from calibration.report import stored_report
from calibration.report.annotator_agreement import AnnotatorAgreement, annotator_agreement
from evals.models import EvalSet, RubricVersion
from evals.workspaces import in_workspace
from judging.models import JudgeConfig
from labeling import label_frames


def annotator_rows(eval_set: EvalSet, rubric_version: RubricVersion) -> tuple[AnnotatorAgreement, ...]:
    """Every annotator's agreement on the eval set, computed from all its labels (three queries)."""
    scope, criteria = label_frames.Scope(eval_set, rubric_version), frames.criteria_of(rubric_version)
    return tuple(
        annotator_agreement(
            label_frames.load_labels(scope),
            label_frames.load_adjudicated(scope, with_decider=True),
            {c.pk: c.gold_policy for c in criteria},
        )
    )


@dataclass(frozen=True)
class ShownAnnotators:
    rows: tuple[AnnotatorAgreement, ...] | None  # None: a worker is computing the first ones
    fresh: stored_report.Freshness | None  # None: computed for this request (a small eval set)


def shown_annotators(eval_set: EvalSet, rubric_version: RubricVersion) -> ShownAnnotators:
    row = _stored_row(eval_set, rubric_version)
    if row is None:
        return ShownAnnotators(annotator_rows(eval_set, rubric_version), None)
    stored, fresh = stored_report.read_stored(row)
    return ShownAnnotators(stored.annotators if stored else None, fresh)


def _stored_row(eval_set: EvalSet, rubric_version: RubricVersion) -> ReportFigures | None:
    """The newest stored report of the eval set and rubric version (over all agent versions), one made for the first
    judge config when a large set has none, None for a small eval set (or a workspace without a judge)."""
    rows = ReportFigures.objects.filter(eval_set=eval_set, rubric_version=rubric_version, agent_version="")
    newest = rows.order_by(F("computed_at").desc(nulls_last=True), "pk").first()
    if newest is not None:
        return newest
    judge = in_workspace(JudgeConfig, eval_set.workspace_id).order_by("pk").first()
    return None if judge is None else stored_report.stored_row(eval_set, rubric_version, judge)
