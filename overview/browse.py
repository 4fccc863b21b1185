"""The eval set page (its outputs, filtered and searched) and the output page (everything said about one output).

They show human labels, gold and judge verdicts side by side; the false-pass / false-fail filters are
calibration's reading of gold against the judge (labeling.gold, calibration.data.frame_reading).

Both pages run a fixed number of queries whatever the number of outputs, criteria, labels or verdicts.
"""

from __future__ import annotations

import string
from dataclasses import dataclass, field

import pandas as pd
from django.db.models import Q, QuerySet

from calibration.data import frames
from calibration.data.frame_reading import current_verdicts
from calibration.report.drilldown import CELLS
from evals.models import Criterion, EvalSet, Output, RubricVersion
from evals.transcript import NONE_QUOTE, quotes_of
from judging.models import JudgeConfig, Verdict, VerdictOutcome
from labeling import label_frames
from labeling.gold import DISAGREED, KEY, derive_gold, item_states
from labeling.gold_loaders import gold_policies
from labeling.models import Annotation, GoldLabel, Label, LabelingQueue

# ?show= on the eval set page -> what people read in the filter
SHOW_CHOICES = [
    ("", "All outputs"),
    ("disagreement", "Annotators disagree (waiting for adjudication)"),
    ("pending-gold", "Gold pending (labeled, no gold yet)"),
    ("evidence-not-found", "A judge's quote is not in the transcript"),
    ("false-pass", "False pass (the chosen judge said PASS, gold is FAIL)"),
    ("false-fail", "False fail (the chosen judge said FAIL, gold is PASS)"),
]
NEEDS_JUDGE = ("false-pass", "false-fail")
WORDS = dict(VerdictOutcome.choices)  # a superset of the human outcomes, with the same words


def matching_outputs(
    eval_set: EvalSet, *, rubric_version: RubricVersion | None, show: str, judge: JudgeConfig | None
) -> set[int] | None:
    """Output ids that `show` keeps (None: no narrowing). At most four queries."""
    if not show:
        return None
    if show == "evidence-not-found":
        verdicts = Verdict.objects.counted().filter(output__case__eval_set=eval_set, evidence_found=False)
        if judge is not None:
            verdicts = verdicts.filter(judge_config=judge)
        if rubric_version is not None:
            verdicts = verdicts.filter(rubric_version=rubric_version)
        return set(verdicts.values_list("output_id", flat=True).distinct())
    if rubric_version is None:
        return set()
    scope = label_frames.Scope(eval_set, rubric_version)
    labels, adjudicated = label_frames.load_labels(scope), label_frames.load_adjudicated(scope)
    policies = gold_policies(rubric_version)  # gold by each criterion's policy (labeling/gold.py)
    if show in NEEDS_JUDGE:
        if judge is None:
            return set()
        judge_outcome, gold_outcome = CELLS[show]
        gold = derive_gold(labels, adjudicated, policies)
        both = current_verdicts(frames.load_verdicts(scope, judge)).merge(gold, on=KEY)
        hits = both[(both["judge"] == judge_outcome) & (both["gold"] == gold_outcome)]
        return {int(x) for x in hits["output"]}
    states = item_states(labels, adjudicated, policies)
    if show == "disagreement":
        return {int(x) for x in states.loc[states["state"] == DISAGREED, "output"]}
    # pending-gold: some criterion has a label but no gold yet (one label so far, or a disagreement).
    return {int(x) for x in states.loc[states["gold"].isna() & (states["n_labels"] > 0), "output"]}


def search_outputs(eval_set: EvalSet, *, q: str, agent_version: str, keep: set[int] | None) -> QuerySet[Output]:
    """The eval set's outputs in case order, narrowed by a search over case id, input and response."""
    outputs = Output.objects.filter(case__eval_set=eval_set).select_related("case").order_by("case__case_id", "pk")
    if agent_version:
        outputs = outputs.filter(agent_version=agent_version)
    if q:
        outputs = outputs.filter(Q(case__case_id__icontains=q) | Q(case__input__icontains=q) | Q(response__icontains=q))
    if keep is not None:
        outputs = outputs.filter(pk__in=keep)
    return outputs


def label_counts(output_ids: list[int], rubric_version: RubricVersion | None) -> dict[int, int]:
    """Submitted annotations per output under the rubric version (one query)."""
    if rubric_version is None:
        return {}
    rows = (
        Annotation.objects.submitted()
        .filter(output_id__in=output_ids, rubric_version=rubric_version)
        .values_list("output_id", flat=True)
    )
    counts: dict[int, int] = {}
    for output_id in rows:
        counts[output_id] = counts.get(output_id, 0) + 1
    return counts


# ---- The output page ----------------------------------------------------------------------------------

# Quote colours, one per source: annotators first, then judges (static/css/calibration.css, .q-*).
PERSON_COLOURS = ("q-a", "q-b", "q-c", "q-d")
JUDGE_COLOURS = ("q-j1", "q-j2", "q-j3", "q-j4")


@dataclass
class Answer:
    """One person's or one judge's answer on one criterion."""

    outcome: str
    evidence: str
    css: str = ""  # the quote's colour, "" when there is nothing to mark
    verdict: Verdict | None = None
    more_evidence: tuple[str, ...] = ()  # a label's further quotes

    @property
    def outcome_text(self) -> str:
        """What people read: "Can't tell" and "N/A", not the stored words."""
        return WORDS.get(self.outcome, self.outcome)


@dataclass
class Source:
    """Who said it: an annotator (letter, name once both are in) or a judge config."""

    title: str
    css: str
    answers: dict[int, Answer] = field(default_factory=dict)  # criterion id -> answer
    judge_config: JudgeConfig | None = None


@dataclass
class CriterionRow:
    criterion: Criterion
    people: list[tuple[Source, Answer]]
    judges: list[tuple[Source, Answer]]
    gold: str | None
    gold_source: str  # "adjudicated", "majority" or ""
    history: list[GoldLabel]

    @property
    def gold_text(self) -> str:
        return WORDS.get(self.gold or "", self.gold or "")


@dataclass
class OutputView:
    people: list[Source]
    judges: list[Source]
    rows: list[CriterionRow]
    names_shown: bool

    def quotes(self, criterion_id: int | None = None) -> dict[str, list[str]]:
        """CSS class -> quotes for transcript.show: each quote gets its source's colour and its own key."""
        found: dict[str, list[str]] = {}
        for source in [*self.people, *self.judges]:
            for cid, answer in source.answers.items():
                quotes = quotes_of(answer.evidence.strip(), answer.more_evidence) if answer.evidence else []
                if criterion_id not in (None, cid) or not quotes or quotes[0].strip() == NONE_QUOTE:
                    continue
                # Two keys of one colour must differ (a dict): the criterion id makes a second, inert class.
                found[f"{source.css} c{cid}"] = quotes
        return found


def _letter(i: int) -> str:
    return string.ascii_uppercase[i] if i < len(string.ascii_uppercase) else str(i + 1)


def output_view(output: Output, rubric_version: RubricVersion) -> OutputView:
    """Labels, gold (with history) and verdicts of one output under one rubric version: four queries."""
    criteria = list(Criterion.objects.filter(rubric_version=rubric_version).order_by("order", "id"))
    labels = list(
        Label.objects.submitted()
        .filter(annotation__output=output, annotation__rubric_version=rubric_version)
        .select_related("annotation__annotator")
        .order_by("annotation__slot", "annotation_id")
    )
    annotations = list(dict.fromkeys(label.annotation for label in labels))
    # Names only once two annotations are in: before that, a name says who still has to label it.
    names_shown = len(annotations) >= 2
    people = []
    for i, annotation in enumerate(annotations):
        title = f"Annotator {_letter(i)}"
        if names_shown:
            title += f" ({annotation.annotator.username})"
        people.append(Source(title, PERSON_COLOURS[i] if i < len(PERSON_COLOURS) else ""))
    by_annotation = {a.pk: s for a, s in zip(annotations, people, strict=True)}
    for label in labels:
        source = by_annotation[label.annotation_id]
        more = tuple(label.more_evidence or ())
        source.answers[label.criterion_id] = Answer(label.outcome, label.evidence, source.css, more_evidence=more)

    judges = _judge_sources(output, rubric_version)
    golds = list(
        GoldLabel.objects.filter(output=output, rubric_version=rubric_version)
        .select_related("decided_by")
        .order_by("criterion_id", "-revision")
    )
    label_frame = pd.DataFrame(
        [(output.pk, label.criterion_id, label.outcome) for label in labels], columns=["output", "criterion", "outcome"]
    )
    adjudicated = pd.DataFrame(
        [(output.pk, g.criterion_id, g.outcome) for g in golds if g.is_current], columns=label_frames.GOLD_COLUMNS
    )
    policies = {c.pk: c.gold_policy for c in criteria}
    derived = derive_gold(label_frame, adjudicated, policies)
    gold = {int(r.criterion): (r.gold, r.gold_source) for r in derived.itertuples()}
    rows = [
        CriterionRow(
            criterion=c,
            people=[(p, p.answers[c.pk]) for p in people if c.pk in p.answers],
            judges=[(j, j.answers[c.pk]) for j in judges if c.pk in j.answers],
            gold=gold.get(c.pk, (None, ""))[0],
            gold_source=gold.get(c.pk, (None, ""))[1],
            history=[g for g in golds if g.criterion_id == c.pk],
        )
        for c in criteria
    ]
    return OutputView(people=people, judges=judges, rows=rows, names_shown=names_shown)


def _judge_sources(output: Output, rubric_version: RubricVersion) -> list[Source]:
    """Each judge config's verdicts on this output: per criterion the first sample of the newest run.

    Verdicts of probe runs (a probed transcript, not this output as it is) are left out, as everywhere else.
    """
    verdicts = (
        Verdict.objects.counted()
        .filter(output=output, rubric_version=rubric_version)
        .select_related("judge_config")
        .order_by("judge_config__name", "criterion_id", "sample", "-run_id")
    )
    sources: dict[int, Source] = {}
    for v in verdicts:
        source = sources.get(v.judge_config_id)
        if source is None:
            i = len(sources)
            css = JUDGE_COLOURS[i] if i < len(JUDGE_COLOURS) else ""
            source = Source(v.judge_config.name, css, judge_config=v.judge_config)
            sources[v.judge_config_id] = source
        if v.criterion_id not in source.answers:
            source.answers[v.criterion_id] = Answer(v.outcome, v.evidence, source.css, verdict=v)
    return list(sources.values())


def default_rubric_version(output: Output) -> RubricVersion | None:
    """The newest version the output was labeled or judged under, or its eval set's queue is open under (one query:
    the three lookups are subqueries, so no join multiplies the rows)."""
    used = (
        Q(pk__in=Annotation.objects.filter(output=output).values("rubric_version_id"))
        | Q(pk__in=Verdict.objects.filter(output=output).values("rubric_version_id"))
        | Q(labeling_queues__in=LabelingQueue.objects.current().filter(eval_set_id=output.case.eval_set_id))
    )
    return RubricVersion.objects.select_related("rubric").filter(used).order_by("-created_at").first()
