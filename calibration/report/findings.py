"""A row's warnings: FINDINGS, a table of small pure rules over the row's parts (RowParts), one per warning
code; docs/calibration.md describes every code."""

from __future__ import annotations

from collections.abc import Callable

from calibration.report.gold_counts import ties_go
from calibration.report.row_parts import RowParts
from calibration.stats.metrics import (
    GATE_MIN_KAPPA,
    HUMAN_MIN_KAPPA,
    JUDGE_SELF_MIN_ALPHA,
    MAX_UNSETTLED_SHARE,
    MIN_N,
    PAIR_MIN_ITEMS,
    PASS,
    Agreement,
    Finding,
    fmt,
    tier_for,
)


def _plural(n: int, one: str = "", many: str = "s") -> str:
    return one if n == 1 else many


# Each rule: a pure function of a row's parts that returns its warning, or None. FINDINGS lists them in the
# order the warnings are shown; docs/calibration.md describes every code.


def no_data(p: RowParts) -> Finding | None:
    if p.agreement.n:
        return None
    return Finding("no_data", "no data: no item has both a PASS/FAIL gold label and a PASS/FAIL verdict")


def kappa_undefined(p: RowParts) -> Finding | None:
    a = p.agreement
    if not a.n or a.kappa is not None:
        return None
    outcome = PASS if a.true_pass == a.n else "FAIL"
    return Finding(
        "kappa_undefined",
        f"kappa is undefined: judge and gold both said {outcome} on all {a.n} items, so chance agreement "
        "is 1 and there is nothing to correct for; add items where the other outcome is right",
    )


def _constant(a: Agreement, pass_rate: float | None) -> str | None:
    """The one outcome a side (the judge's or gold's `pass_rate`) gave on every compared item, when kappa is
    defined; else None."""
    if not a.n or a.kappa is None or pass_rate not in (0.0, 1.0):
        return None
    return PASS if pass_rate == 1.0 else "FAIL"


def constant_judge(p: RowParts) -> Finding | None:
    a = p.agreement
    outcome = _constant(a, a.rater_pass_rate)
    if outcome is None:
        return None
    return Finding(
        "constant_judge",
        f"the judge said {outcome} on every one of the {a.n} items: a constant cannot discriminate, so "
        f"kappa is exactly 0 however high its raw agreement ({fmt(a.observed_agreement, 2)})",
    )


def constant_gold(p: RowParts) -> Finding | None:
    a = p.agreement
    outcome = _constant(a, a.reference_pass_rate)
    if outcome is None:
        return None
    other = "FAIL" if outcome == PASS else PASS
    return Finding(
        "constant_gold",
        f"gold is {outcome} on every one of the {a.n} items: with no {other} to find, kappa is 0 whatever "
        f"the judge does; add items that {other.lower()} this criterion",
    )


def false_pass_on_gating(p: RowParts) -> Finding | None:
    false_pass = p.agreement.false_pass
    if not p.gating or false_pass <= 0:
        return None
    return Finding(
        "false_pass_on_gating",
        f"{false_pass} false pass{_plural(false_pass, '', 'es')} on a gating criterion: the judge passed "
        "outputs people failed; read them in the drilldown before trusting this gate",
    )


def degenerate_interval(p: RowParts) -> Finding | None:
    a = p.agreement
    if not a.kappa_ci or a.kappa_ci[0] != a.kappa_ci[1] or a.rater_pass_rate in (0.0, 1.0):
        return None
    return Finding(
        "degenerate_interval",
        f"the interval collapses to {fmt(a.kappa_ci[0])}: every resample of these {a.n} items agrees "
        "the same way, so the bootstrap cannot show the uncertainty that is there; only more items can",
    )


def small_n(p: RowParts) -> Finding | None:
    n = p.agreement.n
    if not 0 < n < MIN_N:
        return None
    return Finding("small_n", f"n = {n} is below the minimum of {MIN_N} compared items for a tier")


def interval_below_gate(p: RowParts) -> Finding | None:
    a = p.agreement
    if tier_for(a.kappa, a.n) != "gate" or not a.kappa_ci or a.kappa_ci[0] >= GATE_MIN_KAPPA:
        return None
    return Finding(
        "interval_below_gate",
        f"the interval's lower end {fmt(a.kappa_ci[0])} is below the gate threshold {GATE_MIN_KAPPA}: "
        "the data are also consistent with a trend-tier judge",
    )


def humans_disagree(p: RowParts) -> Finding | None:
    h = p.human
    name, ceiling, _ = h.ceiling
    if ceiling is None or ceiling >= HUMAN_MIN_KAPPA:
        return None
    pairs = h.pairwise.pairs if h.pairwise else 0
    over = f" over {pairs} annotator pair{_plural(pairs)}" if name != "alpha" and h.pairwise else ""
    return Finding(
        "humans_disagree",
        f"people agree only at {name} {fmt(ceiling, 2)}{over}: gold is noisy; sharpen the criterion's "
        "definition before calibrating a judge on it",
    )


def human_pairs_sparse(p: RowParts) -> Finding | None:
    pairwise = p.human.pairwise
    if pairwise is None or pairwise.kappa is None or not pairwise.sparse:
        return None
    share = (
        f"the {pairwise.pairs} annotator pairs share a median of"
        if pairwise.pairs != 1
        else "the one annotator pair shares"
    )
    return Finding(
        "human_pairs_sparse",
        f"{share} {pairwise.median_items:g} items, fewer than {PAIR_MIN_ITEMS}: each pair's kappa is mostly "
        "noise, so the human ceiling here is alpha",
    )


def human_ab_subset(p: RowParts) -> Finding | None:
    h = p.human
    if not h.over_two:
        return None
    return Finding(
        "human_ab_subset",
        f"annotator A vs B covers only the {h.n} item{_plural(h.n)} exactly two people labeled "
        f"PASS/FAIL; {h.over_two} item{_plural(h.over_two)} with more annotators count in the "
        "mean pairwise kappa and alpha only",
    )


def no_verdict(p: RowParts) -> Finding | None:
    missing = p.counts.no_verdict
    if not missing:
        return None
    return Finding(
        "no_verdict", f"{missing} labeled item{_plural(missing, ' has', 's have')} no verdict from this judge"
    )


def evidence_not_found(p: RowParts) -> Finding | None:
    flagged = p.counts.evidence_not_found
    if not flagged:
        return None
    return Finding(
        "evidence_not_found",
        f"{flagged} verdict{_plural(flagged)} quote text that is not in "
        "the transcript; they still count (the gate uses them), but check them",
    )


def _much_of_labeled(code: str, count: int, labeled: int, what: str, then: str) -> Finding | None:
    """The warning "COUNT of LABELED labeled items WHAT (P%)THEN" when the items are more than
    MAX_UNSETTLED_SHARE of what people labeled (the one threshold of both gold warnings), else None."""
    if not labeled or count / labeled <= MAX_UNSETTLED_SHARE:
        return None
    return Finding(code, f"{count} of {labeled} labeled items {what} ({fmt(100 * count / labeled, 1)}%){then}")


def many_ties(p: RowParts) -> Finding | None:
    g = p.gold
    then = f"; {ties_go(p.policy)}: adjudicate them, or sharpen the definition"
    return _much_of_labeled("many_ties", g.gold_ties, g.labeled_items, "are ties between annotators", then)


def much_gold_pending(p: RowParts) -> Finding | None:
    g = p.gold
    what = f"have no gold yet under the {p.policy} gold policy"
    then = ": they wait for a second label or a reviewer, and every figure above leaves them out"
    return _much_of_labeled("much_gold_pending", g.awaiting_gold, g.labeled_items, what, then)


def judge_inconsistent(p: RowParts) -> Finding | None:
    me = p.judge_self
    if me.alpha is None or me.alpha >= JUDGE_SELF_MIN_ALPHA:
        return None
    return Finding(
        "judge_inconsistent",
        f"the judge agrees with itself only at alpha {fmt(me.alpha, 2)} over {me.samples} samples of {me.n} items: "
        "a judge that disagrees with itself cannot agree with anyone; fix the prompt or the temperature first",
    )


FINDINGS: tuple[Callable[[RowParts], Finding | None], ...] = (
    # The judge against gold.
    no_data,
    kappa_undefined,
    constant_judge,
    constant_gold,
    false_pass_on_gating,
    degenerate_interval,
    small_n,
    interval_below_gate,
    # The people, and the items.
    humans_disagree,
    human_pairs_sparse,
    human_ab_subset,
    no_verdict,
    evidence_not_found,
    # Gold.
    many_ties,
    much_gold_pending,
    # The judge against itself.
    judge_inconsistent,
)


def findings(parts: RowParts) -> tuple[Finding, ...]:
    """Every warning of a row, in FINDINGS' order."""
    return tuple(found for rule in FINDINGS if (found := rule(parts)) is not None)
