"""What the judge pages render, each built with a fixed number of queries (views stay thin)."""

from __future__ import annotations

import json
from dataclasses import dataclass

from django.db.models import Count, Q, QuerySet

from evals.access import has_role
from evals.models import Role
from evals.transcript import NONE_QUOTE, PREVIEW_CHARS, PREVIEW_TOOL_CALLS, Transcript, render_json, show
from evals.workspaces import in_workspace

from .models import ErrorKind, JudgeConfig, JudgeRun, ProbedOutput, RunItem, Verdict, VerdictOutcome
from .probes.registry import ORIGINAL
from .sample_majority import majority

VERDICTS_PER_PAGE = 50
RECENT_RUNS = 30
RAW_PREVIEW_CHARS = 160


def index_context(user, workspace, form) -> dict:
    # The arms of probe runs are listed on the probe runs' page, not here.
    runs = (
        in_workspace(JudgeRun, workspace)
        .filter(probe_run__isnull=True)
        .select_related("eval_set", "rubric_version__rubric", "judge_config")
        .annotate(done_items=Count("items", filter=Q(items__state=RunItem.State.DONE)))[:RECENT_RUNS]
    )
    configs = in_workspace(JudgeConfig, workspace).annotate(n_runs=Count("runs")).order_by("name")
    return {"runs": runs, "configs": configs, "form": form, "is_lead": has_role(user, workspace, Role.LEAD)}


@dataclass(frozen=True)
class VerdictFilters:
    outcome: str = ""
    criterion: str = ""
    flag: str = ""  # "quote_not_found" or "cache_hit"

    @classmethod
    def from_query(cls, query, run: JudgeRun) -> VerdictFilters:
        outcome = query.get("outcome", "")
        flag = query.get("flag", "")
        return cls(
            outcome=outcome if outcome in VerdictOutcome.values else "",
            criterion=query.get("criterion", "")[:100],
            flag=flag if flag in ("quote_not_found", "cache_hit") else "",
        )

    def apply(self, verdicts: QuerySet[Verdict]) -> QuerySet[Verdict]:
        if self.outcome:
            verdicts = verdicts.filter(outcome=self.outcome)
        if self.criterion:
            verdicts = verdicts.filter(criterion__key=self.criterion)
        if self.flag == "quote_not_found":
            verdicts = verdicts.filter(evidence_found=False)
        if self.flag == "cache_hit":
            verdicts = verdicts.filter(cache_hit=True)
        return verdicts

    @property
    def active(self) -> bool:
        return bool(self.outcome or self.criterion or self.flag)


def verdict_rows(run: JudgeRun) -> QuerySet[Verdict]:
    return (
        Verdict.objects.filter(run=run)
        .select_related("output__case", "criterion")
        .order_by("output__case__case_id", "output__agent_version", "criterion__order", "sample")
    )


def filter_choices(run: JudgeRun) -> dict:
    return {
        "criteria": list(run.rubric_version.criteria.order_by("order").values_list("key", flat=True)),
        "outcomes": list(VerdictOutcome.values),
    }


def pretty_raw(raw: str) -> str:
    """The raw output as the judge gave it; JSON is indented for reading (the text is otherwise untouched)."""
    try:
        return json.dumps(json.loads(raw), indent=2, ensure_ascii=False)
    except (ValueError, TypeError, RecursionError):  # not JSON, or nested deeper than json can walk
        return raw


def shown_transcript(verdict: Verdict) -> Transcript:
    """What the judge graded for this verdict: the output's transcript, or in a probe's arm the probed one."""
    if verdict.probe not in ("", ORIGINAL):
        probed = ProbedOutput.objects.filter(run_id=verdict.run_id, output_id=verdict.output_id).first()
        if probed is not None:
            return Transcript(probed.input, list(probed.tool_calls or []), probed.response)
    return Transcript.of(verdict.output)


def verdict_context(verdict: Verdict, *, full: bool = False) -> dict:
    """Unless `full`, long texts and many tool calls are cut as on the labeling page (a \"Show all\" link)."""
    output, shown = verdict.output, shown_transcript(verdict)
    quote = verdict.evidence if verdict.evidence and verdict.evidence.strip() != NONE_QUOTE else ""
    quotes = {"hl-judge": quote} if quote else {}
    siblings = list(
        Verdict.objects.filter(run_id=verdict.run_id, output_id=verdict.output_id, criterion_id=verdict.criterion_id)
        .order_by("sample")
        .values("pk", "sample", "outcome")
    )
    summary = majority([s["outcome"] for s in siblings]) if len(siblings) > 1 else None
    limit = None if full else PREVIEW_CHARS
    calls = shown.tool_calls if full else shown.tool_calls[:PREVIEW_TOOL_CALLS]
    parts_cut: list[bool] = []

    def cut(text: str):
        part = show(text, quotes, limit)
        parts_cut.extend([True] if part.cut else [])
        return part.html

    transcript = {
        "input": cut(shown.input),
        "tool_calls": [
            {
                "name": cut(str(call.get("name", ""))),
                "args": cut(render_json(call.get("args", ""))),
                "result": cut(render_json(call.get("response", ""))),
            }
            for call in calls
        ],
        "response": cut(shown.response),
        "reference": output.case.reference,
    }
    raw = pretty_raw(verdict.raw_output)
    raw_cut = limit is not None and len(raw) > limit
    return {
        "verdict": verdict,
        "run": verdict.run,
        "raw": raw[:limit] if raw_cut else raw,
        "error_kind_label": ErrorKind(verdict.error_kind).label if verdict.error_kind else "",
        "samples": siblings,
        "majority": summary,
        "transcript": transcript,
        "tool_calls_hidden": len(shown.tool_calls) - len(calls),
        "preview_chars": f"{PREVIEW_CHARS:,}",
        "cut": bool(parts_cut) or len(calls) < len(shown.tool_calls) or raw_cut,
    }
