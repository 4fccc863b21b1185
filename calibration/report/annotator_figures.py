"""The annotators' agreement page's figures: computed now on a small eval set, or read from what a worker stored with
a report of the eval set and rubric version (stored_report.py), with how fresh they are.

They depend on the labels and gold only, never on a judge: every stored report of the eval set and rubric version
(over all agent versions) holds the same ones, so the page reads the newest. A large eval set with no stored report
yet gets one asked for (of its first judge config: any judge's report carries them), and the page says a worker is
computing them.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from django.conf import settings
from django.db.models import Case, F, Subquery, When

from calibration.models import ReportFigures
from calibration.report import stored_report
from calibration.report.annotator_agreement import AnnotatorAgreement
from calibration.report.annotator_loading import annotator_rows
from evals.models import Criterion, EvalSet, RubricVersion
from evals.workspaces import in_workspace
from judging.models import JudgeConfig


@dataclass(frozen=True)
class ShownAnnotators:
    criteria: Sequence[Criterion]  # in rubric order
    rows: tuple[AnnotatorAgreement, ...] | None  # None: a worker is computing the first ones
    fresh: stored_report.Freshness | None  # None: computed for this request (a small eval set)


def shown_annotators(eval_set: EvalSet, rubric_version: RubricVersion) -> ShownAnnotators:
    """The rubric's criteria and the page's rows. A small eval set's page costs no query more than computing them
    did: the criteria's query also says whether a report is stored and, when none is, how large the set is."""
    stored_rows = ReportFigures.objects.filter(eval_set=eval_set, rubric_version=rubric_version, agent_version="")
    newest = stored_rows.order_by(F("computed_at").desc(nulls_last=True), "pk").values("pk")[:1]
    criteria = list(
        Criterion.objects.filter(rubric_version=rubric_version)
        .order_by("order", "id")
        .annotate(stored=Subquery(newest))
        .annotate(items=Case(When(stored__isnull=True, then=stored_report.items_of(eval_set, rubric_version))))
    )
    first = criteria[0] if criteria else None
    if first is None or (first.stored is None and first.items < settings.ICEWATER_REPORT_STORED_FROM_ITEMS):
        return ShownAnnotators(criteria, annotator_rows(eval_set, rubric_version, criteria), None)
    row = stored_rows.get(pk=first.stored) if first.stored is not None else _first_row(eval_set, rubric_version)
    if row is None:  # a workspace without any judge config: no report to store them with
        return ShownAnnotators(criteria, annotator_rows(eval_set, rubric_version, criteria), None)
    stored, fresh = stored_report.read_stored(row)
    return ShownAnnotators(criteria, stored.annotators if stored else None, fresh)


def _first_row(eval_set: EvalSet, rubric_version: RubricVersion) -> ReportFigures | None:
    """The stored report of the first judge config (made now, and asked of a worker), None without a judge config."""
    judge = in_workspace(JudgeConfig, eval_set.workspace_id).order_by("pk").first()
    return None if judge is None else stored_report.stored_row(eval_set, rubric_version, judge)
