"""What the calibration report page shows: its instrument from the URL, its rows, the decision groups and the
approval panel's context. The report's views and the gate's decision views (a refused gating decision shows
the panel again) both build it here."""

from __future__ import annotations

from django.http import HttpRequest
from django.shortcuts import get_object_or_404
from django.urls import reverse
from django.utils.http import urlencode

from calibration.gate.forms import GatingForm, ReasonForm
from calibration.models import GatingMark, GatingReview
from calibration.report.criterion_verdict import CANNOT, GATING, MAY_GATE, MORE_LABELS, decide
from calibration.report.stored_report import agent_versions, shown_report
from calibration.report.svg import confusion_cells, kappa_chart, opacity
from calibration.report.waiting import waiting_work, with_queue
from calibration.stats.candidate_evidence import ASSUMES_CALIBRATION
from calibration.stats.metrics import MIN_N
from calibration.workbench.holdout_looks import count_report_look
from evals.access import (
    checked_query,
    has_role,
)
from evals.models import Criterion, EvalSet, Role, RubricVersion, Workspace
from evals.workspaces import in_workspace
from judging.models import JudgeConfig


def instrument_or_404(
    workspace: Workspace, eval_set: int, rubric_version: int, judge: int
) -> tuple[EvalSet, RubricVersion, JudgeConfig]:
    """The instrument of a report's URL, each part from `workspace`: another workspace's id is a missing one (404)."""
    versions = RubricVersion.objects.select_related("rubric", "approved_by")
    return (
        get_object_or_404(in_workspace(EvalSet, workspace), pk=eval_set),
        get_object_or_404(in_workspace(versions, workspace), pk=rubric_version),
        get_object_or_404(in_workspace(JudgeConfig, workspace), pk=judge),
    )


def asked_agent_version(request: HttpRequest) -> str | None:
    return checked_query(request.GET).get("agent_version") or None


def _rows_for_page(report, criteria: dict[str, Criterion], marks) -> list[dict]:
    active = {m.criterion.key: m for m in marks if m.revoked_at is None}
    return [
        {
            "row": row,
            "mark": active.get(row.criterion) if row.gating else None,
            "criterion": criteria.get(row.criterion),
            "chart": kappa_chart(row),
            "cells": [{"cell": c, "opacity": opacity(c.share)} for c in confusion_cells(row)],
        }
        for row in report.rows
    ]


DECISION_TITLES = {
    GATING: "Gates now",
    MAY_GATE: "May gate now",
    MORE_LABELS: "Could gate with more labels",
    CANNOT: "Cannot gate",
}


def _decision_groups(decision, waiting) -> list[dict]:
    groups = []
    for answer, title in DECISION_TITLES.items():
        rows = [{"verdict": v, "waiting": waiting.of(v.criterion)} for v in decision.criteria if v.answer == answer]
        if rows:
            groups.append({"answer": answer, "title": title, "rows": rows})
    return groups


# The stored figures' change a polling report page already shows (templates/calibration/report.html sends it).
SHOWN_CHANGE_HEADER = "X-Icewater-Shown-Change"

# Decisions to leave gating as it is, shown on the approval panel: the newest few (the admin has all).
REVIEWS_SHOWN = 5


def report_context(request, es, rv, judge, gating_form=None, review_form=None) -> dict:
    agent_version = asked_agent_version(request)
    # On a large eval set, the rows a worker stored, with their freshness (stored_report.py); else computed now.
    shown = shown_report(
        eval_set=es, rubric_version=rv, judge_config=judge, agent_version=agent_version, with_audit_plans=True
    )
    report, is_lead = shown.report, has_role(request.user, request.workspace, Role.LEAD)
    if report is None:  # a worker is computing a large eval set's first figures: the page says so and polls
        return {"es": es, "rv": rv, "judge": judge, "report": None, "fresh": shown.fresh, "is_lead": is_lead}
    # Every render of the report (the page, and the page again after a refused gating decision) shows its
    # figures: for a version measured on the held-out split, that is one counted look. Not the page's poll while a
    # worker computes newer figures when it brings back the very figures already shown (and counted): the person
    # learns nothing new every 2 s. The poll that brings the new ones counts.
    if not (shown.fresh is not None and request.headers.get(SHOWN_CHANGE_HEADER) == str(shown.fresh.as_of)):
        count_report_look(eval_set=es, rubric_version=rv, judge_config=judge, by=request.user, via="report page")
    criteria = {c.key: c for c in Criterion.objects.filter(rubric_version=rv)}
    marks = list(
        GatingMark.objects.filter(rubric_version=rv, judge_config=judge).select_related(
            "criterion", "marked_by", "revoked_by", "calibration_eval_set"
        )
    )
    versions = agent_versions(es) if shown.agent_versions is None else shown.agent_versions
    decision = decide(report.rows)
    waiting = waiting_work(es, rv) if shown.waiting is None else with_queue(shown.waiting, es, rv)
    return {
        "es": es,
        "rv": rv,
        "judge": judge,
        "report": report,
        "decision": decision,
        "decision_groups": _decision_groups(decision, waiting),
        "min_n": MIN_N,
        "waiting": waiting,
        "disputed": sum(w.disputes for w in waiting.by_criterion.values()),
        "rows": _rows_for_page(report, criteria, marks),
        "marks": marks,
        "agent_version": agent_version,
        "agent_versions": sorted(versions),
        "gating_form": gating_form or GatingForm(rows=report.rows, probes=report.probes),
        "gating_now": [r.criterion for r in report.rows if r.gating],
        "reviews": list(
            GatingReview.objects.filter(rubric_version=rv, judge_config=judge).select_related(
                "decided_by", "calibration_eval_set"
            )[:REVIEWS_SHOWN]
        ),
        "review_form": review_form or ReasonForm(prefix="review"),
        "is_lead": is_lead,
        "assumes": ASSUMES_CALIBRATION,
        "fresh": shown.fresh,
    }


def report_url(es: EvalSet, rv: RubricVersion, jc: JudgeConfig, agent_version: str | None) -> str:
    url = reverse("calibration:report", args=[es.pk, rv.pk, jc.pk])
    return f"{url}?{urlencode({'agent_version': agent_version})}" if agent_version else url
