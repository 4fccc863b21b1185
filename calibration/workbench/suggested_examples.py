"""Suggested few-shot examples for a judge version: its disagreements with gold on the development split.

Each suggestion is an item where the judge's current verdict is not the people's gold, false passes first
(the dangerous cell), then false fails, each in output order. It carries the people's own quotes (the
evidence of the labels that agree with gold on that criterion; every label's when none agrees, as after an
adjudication that overruled both) and an excerpt of the transcript around the first quote that lies in the
input or the response (a quote only in a tool call cannot be shown in an example, which holds the input and
the response). The lead picks and edits them in the guidance editor; judging/guidance.derive_config checks
them again (verbatim, gold's outcome, development split) before anything is written.

Only the development split is read: an example from the held-out split would be refused, and suggesting
one would already spend a look at what the held-out items say.
"""

from __future__ import annotations

from collections.abc import Collection
from dataclasses import dataclass, field

from calibration.data import frames
from calibration.report.drilldown import items_in_cell
from evals.models import Criterion, EvalSet, Output, RubricVersion
from evals.transcript import find_quote, normalize_ws, quotes_of
from judging.models import JudgeConfig
from labeling import label_frames
from labeling.models import Label

# An excerpt is the quote with about this many characters around it: enough context for the judge to see
# what the quote is about, short enough that a handful of examples stay a small part of the prompt (the
# guidance's own bound is 4,000 characters per excerpt and 500 per quote).
EXCERPT_CHARS = 600
MAX_QUOTE_CHARS = 500
# How far an excerpt's edge moves to reach whitespace, so no word is cut (a text without spaces is cut).
WORD_REACH = 40
SUGGESTED = 8

CELL_ORDER = ("false-pass", "false-fail")


@dataclass(frozen=True)
class Suggestion:
    output: Output
    cell: str  # "false-pass" or "false-fail"
    gold: str
    judge: str
    quote: str
    input: str  # excerpt of the input around the quote, or "" when the quote is in the response
    response: str  # excerpt of the response: around the quote, or its beginning
    people_quotes: list[str] = field(default_factory=list)

    @property
    def false_pass(self) -> bool:
        return self.cell == "false-pass"

    def as_example(self) -> dict:
        """The example as a guidance document holds it (judging/guidance.py)."""
        return {
            "output_id": self.output.pk,
            "input": self.input,
            "response": self.response,
            "outcome": self.gold,
            "quote": self.quote,
        }


@dataclass(frozen=True)
class Suggestions:
    items: list[Suggestion]
    disagreements: int  # on the development split, before any was left out
    without_quote: int  # disagreements whose people quoted nothing in the input or the response
    already_examples: int  # disagreements already shown to this version as examples


def _edge(text: str, at: int, step: int) -> int:
    """Move `at` by `step` (-1 or 1) up to WORD_REACH characters until it meets whitespace or an end."""
    for _ in range(WORD_REACH):
        if at <= 0 or at >= len(text) or text[at if step > 0 else at - 1].isspace():
            return at
        at += step
    return at


def excerpt_around(text: str, quote: str, *, width: int = EXCERPT_CHARS) -> str | None:
    """A verbatim piece of `text` holding the first occurrence of `quote` (whitespace aside) with about `width`
    characters in all, its edges moved to whitespace; None when the quote is not in the text."""
    spans = find_quote(text, quote, limit=1)
    if not spans:
        return None
    start, end = spans[0]
    pad = max(0, (width - (end - start)) // 2)
    low, high = _edge(text, max(0, start - pad), -1), _edge(text, min(len(text), end + pad), 1)
    return text[low:high].strip()


def beginning(text: str, *, width: int = EXCERPT_CHARS) -> str:
    return text[: _edge(text, min(len(text), width), 1)].strip()


def example_from(output: Output, quotes: list[str]) -> tuple[str, str, str] | None:
    """(quote, input excerpt, response excerpt) for the first usable quote, the response's preferred."""
    usable = [q.strip() for q in quotes if normalize_ws(q) and len(q.strip()) <= MAX_QUOTE_CHARS]
    for quote in usable:
        response = excerpt_around(output.response, quote)
        if response:
            return quote, "", response
    for quote in usable:
        found = excerpt_around(output.case.input, quote)
        if found and normalize_ws(output.response):
            return quote, found, beginning(output.response)
    return None


def _people_quotes(criterion: Criterion, gold: dict[int, str]) -> dict[int, list[str]]:
    """Per output: the quotes of the labels that agree with gold, else of every label (one query)."""
    agreeing: dict[int, list[str]] = {}
    every: dict[int, list[str]] = {}
    labels = Label.objects.submitted().filter(criterion=criterion, annotation__output_id__in=list(gold))
    rows = labels.order_by("annotation__output_id", "annotation__slot")
    for output_id, outcome, evidence, more in rows.values_list(
        "annotation__output_id", "outcome", "evidence", "more_evidence"
    ):
        quotes = quotes_of(evidence, more)
        every.setdefault(output_id, []).extend(quotes)
        if outcome == gold[output_id]:
            agreeing.setdefault(output_id, []).extend(quotes)
    return {o: agreeing.get(o) or every.get(o, []) for o in gold}


def suggest_examples(
    *,
    eval_set: EvalSet,
    rubric_version: RubricVersion,
    judge_config: JudgeConfig,
    criterion: Criterion,
    outputs: Collection[int],
    limit: int = SUGGESTED,
) -> Suggestions:
    """Up to `limit` suggestions for `criterion` from the items of `outputs` (the development split)."""
    scope = label_frames.Scope(eval_set, rubric_version, None)
    labels, adjudicated = label_frames.load_labels(scope), label_frames.load_adjudicated(scope)
    verdicts = frames.load_verdicts(scope, judge_config)
    allowed = set(outputs)
    cells: list[tuple[int, str]] = []
    for cell in CELL_ORDER:
        ids = items_in_cell(labels, adjudicated, verdicts, criterion.pk, cell, criterion.gold_policy)
        cells += [(o, cell) for o in ids if o in allowed]
    used = judge_config.example_output_ids()
    fresh = [(o, cell) for o, cell in cells if o not in used]
    gold = {o: ("FAIL" if cell == "false-pass" else "PASS") for o, cell in fresh}
    quotes = _people_quotes(criterion, gold)
    by_id = Output.objects.select_related("case").in_bulk([o for o, _ in fresh])
    items: list[Suggestion] = []
    without_quote = 0
    for output_id, cell in fresh:
        output = by_id[output_id]
        found = example_from(output, quotes[output_id])
        if found is None:
            without_quote += 1
            continue
        if len(items) < limit:
            quote, input_excerpt, response = found
            judge = "PASS" if cell == "false-pass" else "FAIL"
            items.append(
                Suggestion(output, cell, gold[output_id], judge, quote, input_excerpt, response, quotes[output_id])
            )
    return Suggestions(items, len(cells), without_quote, len(cells) - len(fresh))
