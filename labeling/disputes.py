"""Disputing a gold label: a lead or reviewer who doubts it sends the item back to adjudication, with why.

The dispute stays open until someone decides the item's gold again (labeling.adjudicate.decide adds a new
GoldLabel revision and resolves the dispute with it), so the old gold, the reason and the new gold are all
kept. Only items that have gold can be disputed (a disagreement without gold is already waiting), and only
items with two submitted annotations: adjudicating needs both answers on the page.
"""

from __future__ import annotations

from collections import Counter

from django.db import IntegrityError, transaction
from django.db.models import QuerySet

from evals.access import has_role
from evals.models import Criterion, EvalSet, Output, Role, RubricVersion, User

from .adjudicate import item_view
from .forms import RATIONALE_MAX_CHARS
from .models import GoldDispute


class DisputeRefused(Exception):
    """The dispute cannot be raised; the message says why (nothing was written)."""


def raise_dispute(
    *, output: Output, criterion: Criterion, by: User, reason: str, raised_from: str = "", based_on: int | None = None
) -> GoldDispute:
    """`based_on`: the gold revision the page showed (0: the annotators' gold); if another one is current now,
    nothing is disputed and the refusal says what the gold is now. None: no page to compare (a direct call)."""
    if not has_role(by, output.case.eval_set.workspace_id, Role.REVIEWER, Role.LEAD):
        raise DisputeRefused("Only reviewers and leads dispute gold labels.")
    reason = (reason or "").strip()
    if not reason:
        raise DisputeRefused("Write why you doubt this gold label: the reviewer who decides it again reads it.")
    if len(reason) > RATIONALE_MAX_CHARS:
        raise DisputeRefused(f"Say it in at most {RATIONALE_MAX_CHARS} characters.")
    with transaction.atomic():
        view = item_view(output, criterion)  # the adjudication page's own reading of labels and gold
        if not view.ready:
            raise DisputeRefused(
                "This item does not have two submitted annotations, so it cannot be adjudicated in the app; "
                "correct its gold where it was imported from."
            )
        current = view.current_gold
        outcome = current.outcome if current else view.agreed_outcome
        if outcome is None:
            raise DisputeRefused("This item has no gold yet: it is already waiting in the adjudication queue.")
        revision = current.revision if current else 0
        if based_on is not None and based_on != revision:
            raise DisputeRefused(
                f"The gold label changed after this page was loaded: it is now {current.get_outcome_display()} "
                f"(revision {revision}, {current.decided_by.username}). Nothing was disputed; read it on the page, "
                f"and dispute it again if you still doubt it. You wrote: “{reason}”"
                if current
                else "The gold label changed after this page was loaded; nothing was disputed. Read it and try again."
            )
        open_ = GoldDispute.objects.open().filter(output=output, criterion=criterion).first()
        if open_ is not None:
            raise DisputeRefused(_already(open_))
        try:
            with transaction.atomic():
                return GoldDispute.objects.create(
                    output=output,
                    rubric_version_id=criterion.rubric_version_id,
                    criterion=criterion,
                    disputed_outcome=outcome,
                    disputed_revision=revision,
                    reason=reason,
                    raised_from=raised_from[:300],
                    raised_by=by,
                )
        except IntegrityError:
            raise DisputeRefused("Someone disputed this gold label at the same moment; reload to read why.") from None


def _already(dispute: GoldDispute) -> str:
    return (
        f"{dispute.raised_by.username} already disputed this gold label on {dispute.raised_at:%Y-%m-%d}: "
        f"“{dispute.reason}”. It is waiting for adjudication."
    )


def open_disputes(eval_set: EvalSet, rubric_version: RubricVersion) -> QuerySet[GoldDispute]:
    return (
        GoldDispute.objects.open()
        .filter(rubric_version=rubric_version, output__case__eval_set=eval_set)
        .select_related("raised_by", "criterion")
    )


def open_dispute_counts(eval_set: EvalSet, rubric_version: RubricVersion) -> Counter:
    """Open disputes per criterion key (one query)."""
    keys = open_disputes(eval_set, rubric_version).values_list("criterion__key", flat=True)
    return Counter(keys)
