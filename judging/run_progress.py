"""How far a judge run has got, read from its items and verdicts (aggregated when read, never stored).

One fixed set of queries whatever the run's size, so the progress bar can poll it.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime

from django.db.models import Count, Q, Sum
from django.utils import timezone

from .models import JudgeRun, RunItem, Verdict, VerdictOutcome

# The progress panel lists the most frequent error reasons, this many.
TOP_ERROR_REASONS = 8
OUTCOMES = [o.value for o in VerdictOutcome]


@dataclass(frozen=True)
class ErrorReason:
    kind: str
    reason: str
    count: int


@dataclass(frozen=True)
class Progress:
    run_id: int
    status: str
    total_items: int
    done_items: int
    expected_verdicts: int
    verdicts: int
    outcomes: dict[str, int]
    cache_hits: int
    evidence_not_found: int
    model_calls: int
    tokens_in: int
    tokens_out: int
    started_at: datetime | None
    finished_at: datetime | None
    error: str = ""
    errors: list[ErrorReason] = field(default_factory=list)
    eta_seconds: float | None = None
    items_per_second: float | None = None

    @property
    def percent(self) -> int:
        if not self.total_items:
            return 100 if self.status == JudgeRun.Status.DONE else 0
        return int(100 * self.done_items / self.total_items)

    @property
    def finished(self) -> bool:
        return self.status not in JudgeRun.ACTIVE

    @property
    def complete(self) -> bool:
        """Every planned verdict is there (ERROR counts: it is an answer about the judge)."""
        return self.status == JudgeRun.Status.DONE and self.verdicts == self.expected_verdicts

    @property
    def outcome_rows(self) -> list[tuple[str, int]]:
        return [(o, self.outcomes.get(o, 0)) for o in OUTCOMES]

    def line(self) -> str:
        """One line for a terminal."""
        counts = " ".join(f"{o}={n}" for o, n in self.outcome_rows)
        eta = f" eta {self.eta_seconds:.0f}s" if self.eta_seconds is not None and not self.finished else ""
        return (
            f"run {self.run_id} {self.status}: {self.done_items}/{self.total_items} items, "
            f"{self.verdicts}/{self.expected_verdicts} verdicts ({counts}; cache hits {self.cache_hits}; "
            f"quote not found {self.evidence_not_found}; tokens {self.tokens_in} in / {self.tokens_out} out){eta}"
        )


def progress_of(run: JudgeRun) -> Progress:
    run.refresh_from_db(fields=["status", "started_at", "finished_at", "error"])
    items = RunItem.objects.filter(run=run).aggregate(
        total=Count("pk"),
        done=Count("pk", filter=Q(state=RunItem.State.DONE)),
        calls=Sum("model_calls"),
        tokens_in=Sum("tokens_in"),
        tokens_out=Sum("tokens_out"),
    )
    verdicts = Verdict.objects.filter(run=run)
    by_outcome = {row["outcome"]: row["n"] for row in verdicts.values("outcome").annotate(n=Count("pk")).order_by()}
    flags = verdicts.aggregate(
        cache_hits=Count("pk", filter=Q(cache_hit=True)),
        not_found=Count("pk", filter=Q(evidence_found=False)),
    )
    errors = [
        ErrorReason(row["error_kind"], row["error_reason"], row["n"])
        for row in verdicts.filter(outcome=VerdictOutcome.ERROR)
        .values("error_kind", "error_reason")
        .annotate(n=Count("pk"))
        .order_by("-n", "error_reason")[:TOP_ERROR_REASONS]
    ]
    total, done = items["total"], items["done"] or 0
    if not total:  # an import: its verdicts arrived all at once, no items to work
        total = run.total_items
        done = total if run.status == JudgeRun.Status.DONE else 0
    rate, eta = _rate_and_eta(run, done, total)
    return Progress(
        run_id=run.pk,
        status=run.status,
        total_items=total,
        done_items=done,
        expected_verdicts=run.expected_verdicts,
        verdicts=sum(by_outcome.values()),
        outcomes=by_outcome,
        cache_hits=flags["cache_hits"],
        evidence_not_found=flags["not_found"],
        model_calls=items["calls"] or 0,
        tokens_in=items["tokens_in"] or 0,
        tokens_out=items["tokens_out"] or 0,
        started_at=run.started_at,
        finished_at=run.finished_at,
        error=run.error,
        errors=errors,
        eta_seconds=eta,
        items_per_second=rate,
    )


def _rate_and_eta(run: JudgeRun, done: int, total: int) -> tuple[float | None, float | None]:
    if run.started_at is None or done == 0:
        return None, None
    end = run.finished_at or timezone.now()
    elapsed = max((end - run.started_at).total_seconds(), 1e-3)
    rate = done / elapsed
    return rate, (total - done) / rate if run.status in JudgeRun.ACTIVE else 0.0
