"""An audit's design and predictor in a lead's words, one short phrase (issue 38 item 1): what the gate's page and
text answer, and the list of audit plans, say of each plan, e.g. "uniform audit, predictor: the judge's vote share
+ 1 other config (instrument)". The plan page says it at length (plan_signals.predictor_reading's in_words)."""

from __future__ import annotations

from collections.abc import Sequence

STRATIFIED = "stratified"
JURY = "jury"


def design_and_predictor(design: str | None, predictor: str | None, extra: Sequence[str] | None = None) -> str:
    """`design` "uniform" or "stratified", `predictor` "jury" or "verdict" (as stored on the plan and in the gate's
    JSON), `extra` the names of a jury's extra judge configs in the lead's order (None: not known, as in a gate
    result stored before the names were kept). Empty for no audit at all."""
    if not design:
        return ""
    if design == STRATIFIED:
        # A stratified plan always reads the verdict: its two strata are the judge's PASS and the rest.
        return "stratified audit, predictor: the judge's verdict (two strata, PASS and the rest)"
    if predictor != JURY:
        return f"{design} audit, predictor: the judge's verdict"
    if extra is None:
        return f"{design} audit, predictor: the judge's vote share and any other configs the lead picked"
    if not extra:
        return f"{design} audit, predictor: the judge's vote share"
    others = "1 other config" if len(extra) == 1 else f"{len(extra)} other configs"
    return f"{design} audit, predictor: the judge's vote share + {others} ({', '.join(extra)})"


def predictor_short(design: str, predictor: str, extra: Sequence[str]) -> str:
    """The predictor in a few words, for a column of plans beside their design (the full words in its title)."""
    if design == STRATIFIED:
        return "verdict, two strata"
    if predictor != JURY:
        return "verdict"
    if not extra:
        return "vote share"
    return f"vote share + {len(extra)} config{'' if len(extra) == 1 else 's'}"
