"""Adjudication: reviewers turn disagreements into gold labels, with who, when and why.

The queue lists (output, criterion) items where two or more submitted annotations
have no strict majority and no gold label yet (labeling.gold), and items whose gold
a lead or reviewer disputes (labeling.disputes), with the reason. A reviewer never
sees the items of outputs they labeled themselves (guards.adjudicable_item refuses
them too). Deciding adds a GoldLabel revision; an earlier one stays, not current.
Judge verdicts are never read here: showing them would anchor the reviewer.
"""

from __future__ import annotations

import string
from dataclasses import dataclass, replace

from django.db import IntegrityError, transaction
from django.db.models import QuerySet

from evals.models import Criterion, EvalSet, Output, RubricVersion, User
from evals.naming import output_names
from evals.transcript import quotes_of

from .gold import DISAGREED, gold_of_votes
from .gold_loaders import load_item_states
from .models import Annotation, AuditOrderItem, GoldDispute, GoldLabel, Label

# Highlight classes for the first two annotators' quotes (static/css: mark.hl-a / mark.hl-b).
HIGHLIGHT = {0: "hl-a", 1: "hl-b"}


class AdjudicationError(Exception):
    def __init__(self, message: str, status: int = 409):
        super().__init__(message)
        self.message = message
        self.status = status


class StaleGold(AdjudicationError):
    """The page showed another gold revision than the current one: the decision waits for a confirmation.

    Anyone's newer decision counts, the reviewer's own too (Back after saving shows the page as it was);
    `current` is the gold now (None if the page claimed a revision that is not there)."""

    def __init__(self, current: GoldLabel | None, by: User):
        if current is None:
            message = "This page showed a gold label that is not current; nothing was saved. Reload the page."
        else:
            mine = current.decided_by_id == by.pk
            who = "You already" if mine else current.decided_by.username
            message = (
                f"{who} saved a gold label for this item after this page was loaded: "
                f"{current.get_outcome_display()} (revision {current.revision}). Yours was not saved. "
                "Read it below; to replace it with yours, confirm."
            )
        super().__init__(message)
        self.current = current


@dataclass(frozen=True)
class Side:
    """One annotator's answer on the adjudication page: a letter, never a name."""

    letter: str
    outcome: str
    evidence: str
    css: str  # highlight class of their quote, "" past the second annotator
    more_evidence: tuple[str, ...] = ()  # their further quotes
    places: tuple[str, ...] = ()  # where each quote was found, in the order of `quotes` (filled by the page)

    @property
    def quotes(self) -> list[str]:
        return quotes_of(self.evidence, self.more_evidence)

    @property
    def quotes_with_places(self) -> list[tuple[str, str]]:
        return list(zip(self.quotes, self.places, strict=False))


@dataclass(frozen=True)
class PendingItem:
    output_id: int
    criterion_id: int
    case_id: str
    criterion_key: str
    outcomes: tuple[str, ...]
    dispute_reason: str = ""  # set when the item waits because its gold is disputed
    # Its position in the labeling queue's audit order, where it is released: an audit's decision reads the
    # order's labeled prefix, and an item of its criterion waiting there counts against the decision, so
    # these come first, in order (labeling does not know which criteria an audit plan is of: all of them).
    audit_position: int | None = None


def pending_items(eval_set: EvalSet, rubric_version: RubricVersion, reviewer: User) -> list[PendingItem]:
    """Disagreements waiting for gold and disputed gold labels that this reviewer may decide (constant
    queries): those in the released part of the queue's audit order first, in that order, then by case."""
    states = load_item_states(eval_set, rubric_version)
    disagreed = states[states["state"] == DISAGREED]
    disputes = {
        (d.criterion_id, d.output_id): d.reason
        for d in GoldDispute.objects.open()
        .filter(rubric_version=rubric_version, output__case__eval_set=eval_set)
        .only("criterion_id", "output_id", "reason")
    }
    if not len(disagreed) and not disputes:
        return []
    own = set(
        Annotation.objects.filter(
            annotator=reviewer, rubric_version=rubric_version, output__case__eval_set=eval_set
        ).values_list("output_id", flat=True)
    )
    disagreed = disagreed[~disagreed["output"].isin(own)]
    wanted = {(int(c), int(o)) for c, o in zip(disagreed["criterion"], disagreed["output"], strict=True)}
    wanted |= {item for item in disputes if item[1] not in own}
    if not wanted:
        return []
    items = _describe(rubric_version, wanted)
    return [replace(i, dispute_reason=disputes.get((i.criterion_id, i.output_id), "")) for i in items]


def _describe(rubric_version: RubricVersion, wanted: set[tuple[int, int]]) -> list[PendingItem]:
    """Case ids, criterion keys and the outcomes in annotator order, for a set of (criterion, output)."""
    output_ids = {o for _, o in wanted}
    criteria = {c.pk: c for c in Criterion.objects.filter(rubric_version=rubric_version)}
    labels = (
        Label.objects.submitted()
        .filter(annotation__rubric_version=rubric_version, annotation__output_id__in=output_ids)
        .order_by("annotation__slot")
        .values_list("annotation__output_id", "criterion_id", "outcome", "annotation__output__case__case_id")
    )
    outcomes: dict[tuple[int, int], list[str]] = {}
    case_ids: dict[int, str] = {}
    for output_id, criterion_id, outcome, case_id in labels:
        if (criterion_id, output_id) in wanted:
            outcomes.setdefault((criterion_id, output_id), []).append(outcome)
            case_ids[output_id] = case_id
    names = output_names(output_ids)
    positions = dict(
        AuditOrderItem.objects.filter(
            output_id__in=output_ids,
            order__queue__rubric_version=rubric_version,
            released=True,
        ).values_list("output_id", "position")
    )
    items = [
        PendingItem(
            o,
            c,
            names.get(o, case_ids.get(o, "?")),
            criteria[c].key,
            tuple(outcomes.get((c, o), ())),
            audit_position=positions.get(o),
        )
        for c, o in wanted
        if c in criteria
    ]
    items.sort(
        key=lambda i: (
            i.audit_position is None,
            i.audit_position or 0,
            i.case_id,
            i.output_id,
            criteria[i.criterion_id].order,
            i.criterion_key,
        )
    )
    return items


@dataclass(frozen=True)
class ItemView:
    """Everything the adjudication page shows for one (output, criterion)."""

    sides: list[Side]
    history: list[GoldLabel]
    others_pending: list[Criterion]  # other disagreements on the same output, for moving on
    agreed_outcome: str | None  # the derived gold where the annotators agree
    dispute: GoldDispute | None = None  # an open dispute of this item's gold, with its reason

    @property
    def current_gold(self) -> GoldLabel | None:
        return self.history[0] if self.history and self.history[0].is_current else None

    @property
    def based_on(self) -> int:
        current = self.current_gold
        return current.revision if current else 0

    @property
    def ready(self) -> bool:
        return len(self.sides) >= 2


def item_view(output: Output, criterion: Criterion) -> ItemView:
    """Four queries whatever the number of criteria or outputs: labels of the output, its gold, criteria, an
    open dispute."""
    rows = list(
        Label.objects.submitted()
        .filter(annotation__rubric_version_id=criterion.rubric_version_id, annotation__output=output)
        .order_by("annotation__slot", "annotation_id")
        .values_list("annotation_id", "criterion_id", "outcome", "evidence", "more_evidence")
    )
    order = list(dict.fromkeys(annotation_id for annotation_id, *_ in rows))
    by_criterion: dict[int, dict[int, tuple[str, str]]] = {}
    more: dict[int, tuple[str, ...]] = {}
    for annotation_id, criterion_id, outcome, evidence, more_evidence in rows:
        by_criterion.setdefault(criterion_id, {})[annotation_id] = (outcome, evidence)
        if criterion_id == criterion.pk:
            more[annotation_id] = tuple(more_evidence or ())
    mine = by_criterion.get(criterion.pk, {})
    sides = [
        Side(string.ascii_uppercase[i], *mine[a], HIGHLIGHT.get(i, ""), more.get(a, ()))
        for i, a in enumerate(order)
        if a in mine and i < len(string.ascii_uppercase)
    ]
    # Every gold revision of the output under this rubric version (a handful): this item's history,
    # and which other criteria already have gold.
    golds = list(
        GoldLabel.objects.filter(output=output, rubric_version_id=criterion.rubric_version_id)
        .select_related("decided_by")
        .order_by("-revision")
    )
    history = [g for g in golds if g.criterion_id == criterion.pk]
    gold_ids = {g.criterion_id for g in golds if g.is_current}
    others = [
        c
        for c in Criterion.objects.filter(rubric_version_id=criterion.rubric_version_id).order_by("order", "id")
        if c.pk != criterion.pk and c.pk not in gold_ids and _disagree(by_criterion.get(c.pk, {}), c.gold_policy)
    ]
    outcomes = [o for o, _ in mine.values()]
    agreed = gold_of_votes(outcomes, criterion.gold_policy)
    dispute = GoldDispute.objects.open().filter(output=output, criterion=criterion).select_related("raised_by").first()
    return ItemView(sides=sides, history=history, others_pending=others, agreed_outcome=agreed, dispute=dispute)


def _disagree(answers: dict[int, tuple[str, str]], policy: str) -> bool:
    """Two or more labels that the criterion's gold policy cannot settle (labeling.gold, the one rule)."""
    outcomes = [o for o, _ in answers.values()]
    return len(outcomes) >= 2 and gold_of_votes(outcomes, policy) is None


def decide(*, output: Output, criterion: Criterion, outcome: str, rationale: str, by: User, based_on: int) -> GoldLabel:
    """Record the gold outcome as a new revision. `based_on` is the revision the reviewer's page showed
    (0 = none); if another one is current now, nothing is written (StaleGold: the page asks to confirm)."""
    with transaction.atomic():
        # Serialize decisions on one output, so two reviewers cannot both write revision N+1.
        Output.objects.select_for_update(no_key=True).filter(pk=output.pk).first()
        history = list(GoldLabel.objects.filter(output=output, criterion=criterion).order_by("-revision"))
        current = next((g for g in history if g.is_current), None)
        seen = current.revision if current else 0
        if seen != based_on:
            raise StaleGold(current, by)
        n_labels = Label.objects.submitted().filter(criterion=criterion, annotation__output=output).count()
        if n_labels < 2:
            raise AdjudicationError("This item does not have two submitted annotations yet; nothing to adjudicate.")
        if current is not None:
            current.is_current = False
            current.save(update_fields=["is_current"])
        revision = (history[0].revision if history else 0) + 1
        try:
            with transaction.atomic():
                gold = GoldLabel.objects.create(
                    output=output,
                    rubric_version_id=criterion.rubric_version_id,
                    criterion=criterion,
                    outcome=outcome,
                    decided_by=by,
                    rationale=rationale,
                    source=GoldLabel.Source.ADJUDICATION,
                    revision=revision,
                )
        except IntegrityError:
            raise AdjudicationError("Another reviewer saved a gold label for this item at the same moment. Reload.")
        # Deciding again is the answer to a dispute: it is resolved by this revision (kept, not deleted).
        GoldDispute.objects.open().filter(output=output, criterion=criterion).update(
            resolved_at=gold.decided_at, resolved_by=by, resolution=gold
        )
        return gold


def recent_decisions(eval_set: EvalSet, rubric_version: RubricVersion, limit: int = 15) -> QuerySet[GoldLabel]:
    return (
        GoldLabel.objects.current()
        .filter(rubric_version=rubric_version, output__case__eval_set=eval_set)
        .select_related("output__case", "criterion", "decided_by")
        .order_by("-decided_at")[:limit]
    )
