"""Which of a watch's arrived outputs can be fed to its statistics now, and as what (pure: no Django).

The outputs are fed in arrival order. An output waits for its verdict (the judge has not answered yet), and an
audited one for its settled gold; everything behind a waiting output waits too. So the order in which outputs
reach the statistics never depends on their verdict or gold: a hard output labeled late would otherwise be
counted out of turn (docs/calibration.md, "The watch: anytime-valid monitoring").
"""

from __future__ import annotations

from dataclasses import dataclass

from calibration.stats.watch import NOT_APPLICABLE, AuditedOutput, Outputs

PASS, FAIL, UNJUDGED = "PASS", "FAIL", "unjudged"
# Human outcomes (evals.models.HumanOutcome), written out so this module needs no Django.
GOLD_NOT_APPLICABLE, GOLD_CANT_TELL = "NOT_APPLICABLE", "ABSTAIN"


@dataclass(frozen=True)
class Arrived:
    """One arrived output as the feed reads it: `verdict` PASS, FAIL or unjudged ("" while the judge has not
    answered); `gold` the settled gold of an audited output (None while it is pending)."""

    audited: bool
    verdict: str
    gold: str | None = None


def verdict_value(verdict: str) -> float | None:
    return 1.0 if verdict == PASS else 0.0 if verdict == FAIL else None


def gold_value(gold: str) -> float | None:
    """1 PASS, 0 FAIL, N/A as the statistics' NOT_APPLICABLE, Can't tell as None (it enters as PASS there)."""
    if gold == GOLD_NOT_APPLICABLE:
        return NOT_APPLICABLE
    if gold == GOLD_CANT_TELL:
        return None
    return 1.0 if gold == PASS else 0.0


def ready(rows: list[Arrived]) -> tuple[list[Outputs | AuditedOutput], int]:
    """The observations the rows (in arrival order) make up to the first one that must wait, and how many rows
    they took. Outputs that were not audited, next to each other, make one `Outputs` batch."""
    observations: list[Outputs | AuditedOutput] = []
    passes = fails = unjudged = 0
    taken = 0

    def flush() -> None:
        nonlocal passes, fails, unjudged
        if passes or fails or unjudged:
            observations.append(Outputs(passes=passes, fails=fails, unjudged=unjudged))
        passes = fails = unjudged = 0

    for row in rows:
        if not row.verdict or (row.audited and row.gold is None):
            break
        if row.audited:
            assert row.gold is not None
            flush()
            observations.append(AuditedOutput(verdict=verdict_value(row.verdict), gold=gold_value(row.gold)))
        elif row.verdict == PASS:
            passes += 1
        elif row.verdict == FAIL:
            fails += 1
        else:
            unjudged += 1
        taken += 1
    flush()
    return observations, taken
