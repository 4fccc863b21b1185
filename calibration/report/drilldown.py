"""The false-pass (and false-fail) drilldown: the items of one confusion cell, with everything a lead
needs to judge the judge: the transcript with the judge's and both annotators' quotes highlighted in
place, the gold decision and its rationale, and the judge's raw output.

Selecting the cell reuses the report's frames (the same gold and the same current verdicts): computed for the request
on a small eval set, stored by the report's worker on a large one (all_cells; cell_items.py reads them); the details
of one page of items take four more queries, whatever the page size.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

import pandas as pd
from django.utils.safestring import SafeString

from calibration.data import frames
from calibration.data.frame_reading import current_verdicts
from calibration.data.holdout import report_restriction
from calibration.stats.metrics import FAIL, PASS
from evals.models import Criterion, EvalSet, Output, RubricVersion
from evals.transcript import PREVIEW_CHARS, PREVIEW_TOOL_CALLS, Transcript, quotes_of, render_json, show
from judging.models import JudgeConfig, Verdict
from labeling import label_frames
from labeling.gold import KEY, derive_gold
from labeling.models import GoldDispute, GoldLabel, Label

# URL slug -> (judge outcome, gold outcome)
CELLS = {"false-pass": (PASS, FAIL), "false-fail": (FAIL, PASS)}
CELL_TITLES = {
    "false-pass": "False passes: the judge said PASS where gold is FAIL",
    "false-fail": "False fails: the judge said FAIL where gold is PASS",
}


def items_in_cell(
    labels: pd.DataFrame,
    adjudicated: pd.DataFrame,
    verdicts: pd.DataFrame,
    criterion_id: int,
    cell: str,
    gold_policy: str = "majority",
) -> list[int]:
    """Pure: output ids whose current verdict and gold put them in `cell`, in output order."""
    judge_outcome, gold_outcome = CELLS[cell]

    def mine(df: pd.DataFrame) -> pd.DataFrame:
        return df[df["criterion"] == criterion_id]

    gold = derive_gold(mine(labels), mine(adjudicated), {criterion_id: gold_policy})
    judge = current_verdicts(mine(verdicts))
    both = judge.merge(gold, on=KEY)
    hits = both[(both["judge"] == judge_outcome) & (both["gold"] == gold_outcome)]
    return sorted(int(x) for x in hits["output"])


@dataclass
class TranscriptPart:
    title: str
    html: SafeString


@dataclass
class DrilldownItem:
    output: Output
    parts: list[TranscriptPart] = field(default_factory=list)
    annotators: list[dict] = field(default_factory=list)  # position label, outcome, evidence
    gold: GoldLabel | None = None
    gold_source: str = "majority"  # "adjudicated" or the gold policy that settled it
    verdicts: list[Verdict] = field(default_factory=list)
    dispute: GoldDispute | None = None  # an open dispute of its gold label (the drilldown page sets it)

    @property
    def judge_evidence(self) -> str:
        return self.verdicts[0].evidence if self.verdicts else ""


def _parts(output: Output, quotes: Mapping[str, str | list[str]]) -> list[TranscriptPart]:
    """The transcript with every quote marked; long texts and many tool calls are cut as on the labeling page
    (the output page, one click away, shows all of it)."""

    def cut(text: str) -> SafeString:
        part = show(text, quotes, PREVIEW_CHARS)
        if not part.cut:
            return part.html
        return SafeString(f"{part.html}\n[… cut: {part.shown_text} of {part.length_text} characters shown]")

    calls = list(output.tool_calls or [])
    parts = [TranscriptPart("Input", cut(output.case.input))]
    for i, call in enumerate(calls[:PREVIEW_TOOL_CALLS], start=1):
        name = str(call.get("name", ""))
        args, result = cut(render_json(call.get("args", ""))), cut(render_json(call.get("response", "")))
        parts.append(TranscriptPart(f"Tool call {i}: {name}", SafeString(f"{args}\n→ {result}")))
    if len(calls) > PREVIEW_TOOL_CALLS:
        parts.append(TranscriptPart(f"{len(calls) - PREVIEW_TOOL_CALLS:,} more tool calls", SafeString("(cut)")))
    parts.append(TranscriptPart("Response", cut(output.response)))
    return parts


def load_items(output_ids: list[int], criterion: Criterion, judge_config: JudgeConfig) -> list[DrilldownItem]:
    """Details for a page of items: four queries."""
    outputs = Output.objects.select_related("case").filter(pk__in=output_ids).order_by("pk")
    labels = (
        Label.objects.submitted()
        .filter(criterion=criterion, annotation__output_id__in=output_ids)
        .order_by("annotation__output_id", "annotation__slot")
        .values_list("annotation__output_id", "outcome", "evidence", "more_evidence")
    )
    current_gold = (
        GoldLabel.objects.current().select_related("decided_by").filter(criterion=criterion, output_id__in=output_ids)
    )
    golds = {g.output_id: g for g in current_gold}
    # Newest run first, so the first row of each sample is the one that counts.
    verdicts = Verdict.objects.counted().filter(
        criterion=criterion, judge_config=judge_config, output_id__in=output_ids
    )
    verdicts = verdicts.order_by("output_id", "sample", "-run_id")
    by_output: dict[int, list] = {}
    for output_id, outcome, evidence, more in labels:
        quoted = quotes_of(evidence, more)
        by_output.setdefault(output_id, []).append({"outcome": outcome, "evidence": evidence, "quotes": quoted})
    counted: dict[int, list[Verdict]] = {}
    seen: set[tuple[int, int]] = set()
    for v in verdicts:
        if (v.output_id, v.sample) not in seen:
            seen.add((v.output_id, v.sample))
            counted.setdefault(v.output_id, []).append(v)
    items = []
    for output in outputs:
        people = by_output.get(output.pk, [])
        for i, person in enumerate(people):
            person["position"] = "Annotator " + ("ABCDEFGH"[i] if i < 8 else str(i + 1))
            person["css"] = {0: "hl-a", 1: "hl-b"}.get(i, "")
        item_verdicts = counted.get(output.pk, [])
        quotes: dict[str, str | list[str]] = {"hl-judge": item_verdicts[0].evidence if item_verdicts else ""}
        for css, person in zip(("hl-a", "hl-b"), people, strict=False):
            quotes[css] = person["quotes"]
        transcript = Transcript.of(output)
        for person in people:  # where each quote was found: the input, a tool call, the response
            person["places"] = [(q, ", ".join(transcript.found_in(q)) or "not found") for q in person["quotes"]]
        gold = golds.get(output.pk)
        items.append(
            DrilldownItem(
                output=output,
                parts=_parts(output, quotes),
                annotators=people,
                gold=gold,
                gold_source="adjudicated" if gold else criterion.gold_policy,
                verdicts=item_verdicts,
            )
        )
    return items


def _cell_frames(
    eval_set: EvalSet, rubric_version: RubricVersion, judge_config: JudgeConfig, agent_version: str | None
) -> tuple[pd.DataFrame, pd.DataFrame, pd.DataFrame]:
    """The labels, adjudicated gold and verdicts the report's cells count (three queries and the split's)."""
    scope = label_frames.Scope(eval_set, rubric_version, agent_version)
    labels, adjudicated = label_frames.load_labels(scope), label_frames.load_adjudicated(scope)
    verdicts = frames.load_verdicts(scope, judge_config)
    restriction = report_restriction(eval_set=eval_set, rubric_version=rubric_version, judge_config=judge_config)
    if restriction is not None:
        # The report's cells count the held-out split only for such a judge: so do the items behind them.
        labels, adjudicated, verdicts = (
            df[df["output"].isin(restriction.output_ids)] for df in (labels, adjudicated, verdicts)
        )
    return labels, adjudicated, verdicts


def cell_output_ids(
    *,
    eval_set: EvalSet,
    rubric_version: RubricVersion,
    judge_config: JudgeConfig,
    criterion: Criterion,
    cell: str,
    agent_version: str | None = None,
) -> list[int]:
    """The items of one cell, computed now from all the rows (a small eval set; a large one's are stored)."""
    labels, adjudicated, verdicts = _cell_frames(eval_set, rubric_version, judge_config, agent_version)
    return items_in_cell(labels, adjudicated, verdicts, criterion.pk, cell, criterion.gold_policy)


def cell_key(criterion_id: int, cell: str) -> str:
    """The key of one cell's items among every cell's (all_cells)."""
    return f"{criterion_id}:{cell}"


def all_cells(
    *, eval_set: EvalSet, rubric_version: RubricVersion, judge_config: JudgeConfig, agent_version: str | None = None
) -> dict[str, tuple[int, ...]]:
    """Every criterion's false-pass and false-fail items (cell_key -> output ids), as cell_output_ids finds each:
    what a worker stores with a large eval set's report (stored_report.py), so its drilldown loads no rows."""
    labels, adjudicated, verdicts = _cell_frames(eval_set, rubric_version, judge_config, agent_version)
    return {
        cell_key(c.pk, cell): tuple(items_in_cell(labels, adjudicated, verdicts, c.pk, cell, c.gold_policy))
        for c in frames.criteria_of(rubric_version)
        for cell in CELLS
    }
