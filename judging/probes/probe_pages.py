"""What the probe pages render, each with a fixed number of queries (the views stay thin)."""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass

from django.core.paginator import Page, Paginator
from django.db.models import Prefetch

from evals.access import has_role
from evals.models import Criterion, Output, Role
from evals.transcript import NONE_QUOTE, Transcript, highlight, render_json
from evals.workspaces import in_workspace
from judging.models import JudgeRun, ProbedOutput, ProbeRun, Verdict

from .registry import ORIGINAL
from .results import ProbeResults, pairs_of, results_of
from .runs import progress_of, status_from

RECENT_PROBE_RUNS = 20
EXAMPLES_PER_PAGE = 10
# Which pairs the examples page lists: ?show=KEY -> (button, what it lists).
SHOW = {
    "flips": ("Flips", "pairs whose verdict flipped (PASS and FAIL either way)"),
    "pass_to_fail": ("PASS → FAIL", "PASS turned FAIL (for a negative control: the planted flaws it caught)"),
    "fail_to_pass": ("FAIL → PASS", "FAIL turned PASS"),
    "missed": ("PASS stayed", "PASS stayed PASS (for a negative control: the planted flaws the judge missed)"),
    "errors": ("ERROR", "pairs with an ERROR on either side (never a flip)"),
    "all": ("All", "every pair"),
}


def _shows(show: str, original: str, probed: str) -> bool:
    if show == "pass_to_fail":
        return (original, probed) == ("PASS", "FAIL")
    if show == "fail_to_pass":
        return (original, probed) == ("FAIL", "PASS")
    if show == "flips":
        return {original, probed} == {"PASS", "FAIL"}
    if show == "missed":
        return (original, probed) == ("PASS", "PASS")
    if show == "errors":
        return "ERROR" in (original, probed)
    return True


def index_context(user, workspace, form) -> dict:
    arms = Prefetch("judge_runs", queryset=JudgeRun.objects.only("pk", "status", "probe_run_id"))
    runs = (
        in_workspace(ProbeRun, workspace)
        .select_related("eval_set", "rubric_version__rubric", "judge_config")
        .prefetch_related(arms)
    )
    rows = [{"run": r, "status": status_from([a.status for a in r.judge_runs.all()])} for r in runs[:RECENT_PROBE_RUNS]]
    return {"rows": rows, "form": form, "is_lead": has_role(user, workspace, Role.LEAD)}


def status_context(probe_run: ProbeRun) -> dict:
    """The polled panel: progress, and the results once every arm has ended."""
    progress = progress_of(probe_run)
    results = results_of(probe_run) if progress.finished else None
    return {"probe_run": probe_run, "progress": progress, "results": results}


@dataclass(frozen=True)
class TableRow:
    criterion: str
    cells: list  # a ProbeCell or None per probe of the run, in run order
    warnings: tuple
    notes: tuple
    clean: bool
    report_row: object = None  # the calibration report's row (kappa, tier) when shown beside it


def table_rows(results: ProbeResults, report_rows=()) -> list[TableRow]:
    """One row per criterion, one cell per probe of the run (None where the probe has no role on it)."""
    by_key = {r.criterion: r for r in report_rows}
    names = [p["name"] for p in results.probes]
    return [
        TableRow(
            criterion=c.criterion,
            cells=[c.cell(name) for name in names],
            warnings=c.warnings,
            notes=c.notes,
            clean=results.clean_for(c.criterion),
            report_row=by_key.get(c.criterion),
        )
        for c in results.criteria
    ]


def _parts(t: Transcript, quote: str) -> list[dict]:
    quotes = {"hl-judge": quote} if quote and quote.strip() != NONE_QUOTE else {}
    parts = [{"title": "Input", "html": highlight(t.input, quotes)}]
    for n, call in enumerate(t.tool_calls, start=1):
        text = f"arguments: {render_json(call.get('args', ''))}\nresult: {render_json(call.get('response', ''))}"
        parts.append({"title": f"Tool call {n} · {call.get('name', '')}", "html": highlight(text, quotes)})
    parts.append({"title": "Response", "html": highlight(t.response, quotes)})
    return parts


def examples_context(probe_run: ProbeRun, probe: str, criterion: Criterion, show: str, page_number) -> dict:
    """Original and probed transcript side by side, with both verdicts and their quotes, a page of pairs."""
    pairs = [p for p in pairs_of(probe_run, probe, criterion.pk) if _shows(show, p[1], p[2])]
    page: Page = Paginator(pairs, EXAMPLES_PER_PAGE).get_page(page_number)
    ids = [output_id for output_id, _, _ in page.object_list]
    arms = dict(probe_run.judge_runs.filter(probe__in=(ORIGINAL, probe)).values_list("probe", "pk"))
    outputs = {o.pk: o for o in Output.objects.select_related("case").filter(pk__in=ids)}
    probed = {
        p.output_id: Transcript(p.input, list(p.tool_calls or []), p.response)
        for p in ProbedOutput.objects.filter(run_id=arms.get(probe), output_id__in=ids)
    }
    verdicts: dict[tuple[str, int], list[Verdict]] = defaultdict(list)
    rows = Verdict.objects.filter(run_id__in=arms.values(), output_id__in=ids, criterion=criterion)
    for v in rows.order_by("sample"):
        verdicts[(v.probe, v.output_id)].append(v)
    items = []
    for output_id, original_outcome, probed_outcome in page.object_list:
        output = outputs[output_id]
        sides = []
        for arm, transcript, outcome in (
            (ORIGINAL, Transcript.of(output), original_outcome),
            (probe, probed.get(output_id), probed_outcome),
        ):
            found = verdicts[(arm, output_id)]
            quote = found[0].evidence if found else ""
            parts = _parts(transcript, quote) if transcript is not None else []
            sides.append({"arm": arm, "outcome": outcome, "verdicts": found, "parts": parts})
        flipped = {original_outcome, probed_outcome} == {"PASS", "FAIL"}
        items.append({"output": output, "sides": sides, "flipped": flipped})
    return {"items": items, "page": page, "total": len(pairs)}
