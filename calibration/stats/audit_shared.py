"""One audit sample for every gating criterion of a candidate (issue 37 item 3): the release decision of k criteria
read from one shared random order.

Pure functions over arrays (numpy), no Django. Annotators label every criterion of an output they open, so one
seeded uniformly random order of the candidate's outputs (labeling/audit_order.py, already one per eval set) and
one labeled prefix of it serve every criterion: criterion j's gold on the prefix, its judge's verdicts on all N
outputs, its own minimum m_j and its own design (uniform, or stratified on its own judge's verdicts, frozen at the
start). Each criterion's test is audit_stats.py's (uniform) or strata_plan.py's (stratified), unchanged; what this
module adds is the level each side runs at and the gate's conjunction over them.

**The gate's conjunction, and the level of each side.** The release passes only when every criterion passes and
fails as soon as one fails. Let alpha = (1 - confidence) / 2, the error the gate states per side.

- *A wrong PASS* (some criterion j really below its minimum, theta_j < m_j, and the gate passes) needs every
  criterion to have passed, criterion j included: the event lies inside "criterion j's PASS test rejected its true
  null", whose chance is at most alpha. So each criterion's PASS test runs at alpha, **without correction**: the
  gate's PASS is an intersection-union test (Berger 1982; Berger & Hsu 1996), valid at alpha for every k and every
  dependence between the criteria.
- *A wrong FAIL* (every criterion really at or above its minimum, and the gate fails) happens when **any** one of k
  FAIL tests rejects a true null: at alpha each, up to k alpha (the union of k events). So each criterion's FAIL
  test runs at **alpha / k** (the union bound, Bonferroni): P(any) <= sum_j alpha / k = alpha, for every dependence.
  tests/calibration/stats/test_audit_shared.py shows the need: three independent criteria at their boundary, each
  FAIL test at alpha, fail the release 21.9% of 1,000 orders at confidence 0.8 where 10% is allowed (6.5% at 0.95,
  where 2.5% is).
- *Why the union bound and not combined e-values.* Under "every criterion meets its minimum" the average of the k
  FAIL capitals is a test supermartingale too (each is one for the shared filtration, below), so "the mean of the
  FAIL capitals >= 1 / alpha" is a valid FAIL of the release, and it rejects at least whenever the union bound
  does (the mean is at least max / k). But it rejects the intersection only: it can fail a release without any
  criterion being refuted, and the lead is left without a criterion to fix and the gate without a criterion to
  name ("not met: which?"); closed testing would recover names at a cost that grows as 2^k. A release usually has
  one binding criterion, and then the mean is about that criterion's capital / k, the union bound's threshold:
  bench/audit_shared.py measures the same median and worst labels to a FAIL by either rule in all its 8 cells. So
  the gate uses the union bound, and every FAIL names its criterion.
- With k = 1 both sides run at alpha: exactly today's single-criterion decision (tested to 1e-9).

The release's decision along the order: FAIL at the first label at which some criterion's first decision is FAIL,
PASS at the label at which the last criterion passes when every criterion's first decision is PASS, undecided
otherwise. Each criterion keeps its own first decision (audit_stats.first_decisions), so a criterion that passed
stays passed while the others are still labeled: the bounds above hold whatever the stopping, since each test is
anytime-valid.

**Why every criterion's test stays valid on one shared order.** Let F_t hold everything known after t labels: which
outputs were drawn and every criterion's gold on them. The order is a uniform permutation fixed by the seed, so
given F_t the next output is uniform over the N - t not drawn yet, whatever the gold seen; so the next gold of
criterion j has conditional mean (its total - its passes so far) / (N - t), exactly the null mean its test bets
against, and restricted to one of criterion j's strata the order is a uniform order of the stratum. Every bet reads
only the labels before it (F_(t-1)-measurable). So each criterion's capital is a non-negative (super)martingale for
the *shared* filtration, not only for its own labels, and Ville's inequality bounds each side as above. Other
criteria's gold never enters a test, and needs no independence: the two bounds above hold under any dependence.

**The next batch when criteria disagree** (`next_release`): the shared order's next k positions, whatever the
labels and the verdicts say. The choice reads no label at all, so it is predictable for every filtration, and it is
the choice that keeps every criterion's test as it is:
- A uniform criterion's test needs the next output uniform over the rest; a stratified one's needs each of its
  strata labeled in a uniform order. A label-dependent choice (the criterion furthest from a decision, its hardest
  stratum) takes outputs from one criterion's stratum; inside another criterion's strata those outputs are not a
  uniform draw (they are the outputs criterion 1's judge passed, say), so the other criterion's conditional null
  mean is wrong and its test invalid, predictable choice or not. The simulation in the tests shows it: a
  predictable allocation by criterion 1's strata makes criterion 2's uniform test wrong far more often than alpha.
  A valid adaptive allocation would need every criterion's test stratified on the joint pattern of the k verdicts
  (2^k strata, a null split over 2^k - 1 dimensions), which the blind measurements of issue 41 already price
  above the uniform test at k = 1 ("Stratified plans" in docs/calibration.md).
- A label-dependent choice also shows annotators what the judge said (issue 41: releases are blind).
- A choice that peeks at the gold of outputs not labeled yet breaks everything (the negative control in the tests).
So a shared plan releases the order's prefix, as a single-criterion plan does since issue 41, and what differs
between criteria is only how each test reads the same labels.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from calibration.stats.audit_stats import (
    FAIL,
    MIN_GOLD,
    PASS,
    AuditDecision,
    Decisions,
    Floats,
    Ints,
    Objects,
    audit_decision,
    checked_inputs,
    decide_each_label,
    first_decisions,
)
from calibration.stats.audit_strata import strata_of
from calibration.stats.strata_plan import _plan_tests, stratified_decision

UNIFORM, STRATIFIED = "uniform", "stratified"


def side_levels(*, confidence: float, k: int) -> tuple[float, float]:
    """(alpha of each criterion's PASS test, alpha of each criterion's FAIL test) for a gate of k criteria at
    `confidence`: alpha and alpha / k, alpha = (1 - confidence) / 2 (the module's docstring)."""
    if not 0 < confidence < 1:
        raise ValueError(f"confidence must be between 0 and 1, got {confidence}")
    if k < 1:
        raise ValueError(f"a gate has at least one criterion, got {k}")
    alpha = (1 - confidence) / 2
    return alpha, alpha / k


def fail_confidence(*, confidence: float, k: int) -> float:
    """The confidence whose per-side level is the FAIL side's alpha / k: 1 - (1 - confidence) / k (the upper bound
    shown for a criterion is the one its FAIL test reads)."""
    _alpha, alpha_fail = side_levels(confidence=confidence, k=k)
    return 1 - 2 * alpha_fail


def sided_decisions(
    *,
    gold: Floats,
    N: int,
    log_k_pass: Floats,
    log_k_fail: Floats,
    minimum: float,
    confidence: float,
    k: int,
    min_gold: int,
) -> Decisions:
    """first_decisions with the PASS test at alpha and the FAIL test at alpha / k, for S sequences (gold (S, T)).

    first_decisions applies one threshold log(1 / alpha) to both capitals; a FAIL capital lowered by log k crosses
    it exactly when the capital itself crosses log(k / alpha), the union bound's threshold. The exact rule is
    untouched (it cannot err). The capitals returned are the tests' own, unshifted."""
    shifted = first_decisions(
        gold=gold,
        N=N,
        log_k_pass=log_k_pass,
        log_k_fail=log_k_fail - math.log(k),
        minimum=minimum,
        confidence=confidence,
        min_gold=min_gold,
    )
    return dataclasses.replace(shifted, log_k_fail=log_k_fail)


@dataclass(frozen=True)
class ReleaseDecisions:
    """The gate's decision along S orders of one shared sample: per criterion (k, S) and for the release (S,)."""

    decided: Objects  # (S,) "PASS", "FAIL" or ""
    at: Ints  # (S,) labels in the order at the release's decision, -1 if none
    criteria_decided: Objects  # (k, S)
    criteria_at: Ints  # (k, S)


def conjunction(decided: Objects, at: Ints) -> tuple[Objects, Ints]:
    """The release's decision from each criterion's first decision (k, S) and its label (k, S): FAIL at the first
    criterion's FAIL; PASS when every criterion passed, at the last one's PASS; else undecided ("", -1)."""
    decided = np.atleast_2d(decided)
    at = np.atleast_2d(at)
    any_fail = (decided == FAIL).any(axis=0)
    all_pass = (decided == PASS).all(axis=0)
    fail_at = np.where(decided == FAIL, at, np.iinfo(np.int64).max).min(axis=0)
    pass_at = np.where(decided == PASS, at, -1).max(axis=0)
    out = np.full(decided.shape[1], "", dtype=object)
    out[all_pass] = PASS
    out[any_fail] = FAIL
    return out, np.where(any_fail, fail_at, np.where(all_pass, pass_at, -1))


def release_decisions_each_order(
    *,
    golds: Sequence[Floats],
    scores: Sequence[Floats],
    minimums: Sequence[float],
    confidence: float,
    min_gold: int = MIN_GOLD,
    union_bound: bool = True,
    gate_size: int | None = None,
) -> ReleaseDecisions:
    """The gate's decision along each of S orders of one shared sample, every criterion uniform: golds[j] (S, T)
    criterion j's gold in each order (NaN pending), scores[j] (S, N) its judge's scores in the same orders (or
    (N,) for one order shared by all). union_bound=False runs each FAIL test at alpha (the invalid conjunction the
    tests show, for the negative control and the bench's "today" column). gate_size: the gate's k when only some
    of its criteria are given here (the others read elsewhere, e.g. a stratified one); len(golds) by default."""
    if not (len(golds) == len(scores) == len(minimums)) or not golds:
        raise ValueError("one gold array, one score array and one minimum per criterion")
    k = len(golds) if gate_size is None else gate_size
    if k < len(golds):
        raise ValueError(f"a gate of {k} criteria cannot hold {len(golds)}")
    decided, at = [], []
    for gold, f, minimum in zip(golds, scores, minimums, strict=True):
        gold = np.atleast_2d(np.asarray(gold, dtype=float))
        d = decide_each_label(gold=gold, f=f, minimum=minimum, confidence=confidence, min_gold=min_gold)
        N = np.atleast_2d(f).shape[1]
        d = sided_decisions(
            gold=gold,
            N=N,
            log_k_pass=d.log_k_pass,
            log_k_fail=d.log_k_fail,
            minimum=minimum,
            confidence=confidence,
            k=k if union_bound else 1,
            min_gold=min_gold,
        )
        decided.append(d.decided)
        at.append(d.at)
    per_decided, per_at = np.stack(decided), np.stack(at)
    release, release_at = conjunction(per_decided, per_at)
    return ReleaseDecisions(release, release_at, per_decided, per_at)


@dataclass(frozen=True)
class CriterionAudit:
    """One gating criterion of a shared audit, in the shared order's positions.

    verdicts: its judge's verdict on each of the N outputs (1, 0, None/NaN); gold: its gold on its labeled prefix
    (1, 0, -1 N/A, None/NaN pending); strata: for a stratified criterion, the split frozen at the start (0 judge
    PASS, 1 the rest; from `verdicts` when not given)."""

    key: str
    verdicts: Sequence[float | None] | Floats
    gold: Sequence[float | None] | Floats
    minimum: float
    design: str = UNIFORM
    strata: Sequence[int] | Ints | None = None


@dataclass(frozen=True)
class CriterionResult:
    key: str
    design: str
    decision: AuditDecision  # its first decision at the sided levels; lower at alpha, upper at alpha / k
    alpha_pass: float
    alpha_fail: float


@dataclass(frozen=True)
class SharedDecision:
    decided: str | None  # the release: "PASS", "FAIL" or None
    decided_at: int | None  # labels in the shared order when it was decided
    deciding: tuple[str, ...]  # the criteria that decided it: the failing one, or (PASS) every criterion
    undecided: tuple[str, ...]  # criteria without a decision yet
    criteria: tuple[CriterionResult, ...]
    confidence: float
    alpha_pass: float
    alpha_fail: float


@dataclass(frozen=True)
class _Read:
    """One criterion's inputs checked, and each side's log capital along its labels (1, T)."""

    gold: Floats
    N: int
    log_k_pass: Floats
    log_k_fail: Floats


def _stratified_inputs(c: CriterionAudit) -> tuple[Floats, Ints, tuple[int, int]]:
    strata = np.asarray(strata_of(c.verdicts) if c.strata is None else c.strata, dtype=np.int8).ravel()
    g = np.array([np.nan if v is None else v for v in c.gold], dtype=float).ravel()
    if len(c.verdicts) != strata.size:
        raise ValueError(f"{c.key}: {len(c.verdicts)} verdicts for {strata.size} frozen strata")
    if g.size > strata.size:
        raise ValueError(f"{c.key}: gold has {g.size} items but there are only {strata.size} outputs")
    # The shared order's prefix: its strata in release order, the path a stratified test counts labels in.
    return g, strata[: g.size], (int(np.sum(strata == 0)), int(np.sum(strata == 1)))


def _capitals(c: CriterionAudit, *, confidence: float, k: int, min_gold: int) -> _Read:
    if not 0 <= c.minimum <= 1:
        raise ValueError(f"{c.key}: minimum must be between 0 and 1, got {c.minimum}")
    if c.design == UNIFORM:
        g, _raw, f = checked_inputs(gold=c.gold, verdicts=c.verdicts, confidence=confidence)
        d = decide_each_label(gold=g[None, :], f=f, minimum=c.minimum, confidence=confidence, min_gold=min_gold)
        return _Read(g, f.size, d.log_k_pass, d.log_k_fail)
    if c.design == STRATIFIED:
        g, path, sizes = _stratified_inputs(c)
        if not g.size:
            return _Read(g, sum(sizes), np.zeros((1, 0)), np.zeros((1, 0)))
        # Each side's capitals on the grid its own level refines (any grid gives a lower bound of the product at
        # every split: strata_plan._plan_tests), the PASS side's at alpha, the FAIL side's at alpha / k.
        high = fail_confidence(confidence=confidence, k=k)
        log_k_pass, log_k_fail = _plan_tests(g, path, sizes, c.minimum, confidence, min_gold)
        if k > 1:
            log_k_fail = _plan_tests(g, path, sizes, c.minimum, high, min_gold)[1]
        return _Read(g, sum(sizes), log_k_pass[None, :], log_k_fail[None, :])
    raise ValueError(f"{c.key}: the design is {UNIFORM} or {STRATIFIED}, not {c.design!r}")


def criterion_first_decision(c: CriterionAudit, *, confidence: float, k: int, min_gold: int = MIN_GOLD) -> Decisions:
    """Criterion c's first decision along its labels in a gate of k criteria (PASS at alpha, FAIL at alpha / k),
    without the bounds: what the release's decision reads (and the simulations, which need nothing else)."""
    read = _capitals(c, confidence=confidence, k=k, min_gold=min_gold)
    return sided_decisions(
        gold=read.gold[None, :],
        N=read.N,
        log_k_pass=read.log_k_pass,
        log_k_fail=read.log_k_fail,
        minimum=c.minimum,
        confidence=confidence,
        k=k,
        min_gold=min_gold,
    )


def _criterion(c: CriterionAudit, *, confidence: float, k: int, min_gold: int) -> CriterionResult:
    """The criterion's decision (sided), its lower bound at alpha and upper bound at alpha / k, its estimate."""
    alpha_pass, alpha_fail = side_levels(confidence=confidence, k=k)
    d = criterion_first_decision(c, confidence=confidence, k=k, min_gold=min_gold)
    reads = []
    for level in dict.fromkeys((confidence, fail_confidence(confidence=confidence, k=k))):
        if c.design == UNIFORM:
            reads.append(
                audit_decision(gold=c.gold, verdicts=c.verdicts, minimum=c.minimum, confidence=level, min_gold=min_gold)
            )
        else:
            g, path, sizes = _stratified_inputs(c)
            reads.append(
                stratified_decision(
                    gold=g, path=path, sizes=sizes, minimum=c.minimum, confidence=level, min_gold=min_gold
                )
            )
    decision = dataclasses.replace(
        reads[0],
        decided=d.decided[0] or None,
        decided_at=int(d.at[0]) if d.at[0] > 0 else None,
        decided_by=d.by[0] or None,
        upper=reads[-1].upper,
    )
    return CriterionResult(c.key, c.design, decision, alpha_pass, alpha_fail)


def shared_decision(
    *, criteria: Sequence[CriterionAudit], confidence: float = 0.95, min_gold: int = MIN_GOLD
) -> SharedDecision:
    """The release's decision from one shared sample: each criterion's first decision with its PASS test at alpha
    and its FAIL test at alpha / k (the module's docstring), and their conjunction. Every criterion reads the same
    order: the same N, each its own labeled prefix of it."""
    if not criteria:
        raise ValueError("a shared audit needs at least one criterion")
    keys = [c.key for c in criteria]
    if len(set(keys)) != len(keys):
        raise ValueError(f"each criterion once, got {keys}")
    sizes = {len(c.verdicts) for c in criteria}
    if len(sizes) != 1:
        raise ValueError(f"every criterion reads the same order of outputs; got verdicts for {sorted(sizes)} outputs")
    k = len(criteria)
    results = tuple(_criterion(c, confidence=confidence, k=k, min_gold=min_gold) for c in criteria)
    decided = np.array([[r.decision.decided or ""] for r in results], dtype=object)
    at = np.array([[r.decision.decided_at or -1] for r in results])
    release, release_at = conjunction(decided, at)
    verdict = release[0] or None
    if verdict == FAIL:
        deciding = tuple(
            r.key for r in results if r.decision.decided == FAIL and r.decision.decided_at == int(release_at[0])
        )
    elif verdict == PASS:
        deciding = tuple(keys)
    else:
        deciding = ()
    alpha_pass, alpha_fail = side_levels(confidence=confidence, k=k)
    return SharedDecision(
        decided=verdict,
        decided_at=int(release_at[0]) if release_at[0] > 0 else None,
        deciding=deciding,
        undecided=tuple(r.key for r in results if r.decision.decided is None),
        criteria=results,
        confidence=confidence,
        alpha_pass=alpha_pass,
        alpha_fail=alpha_fail,
    )


def next_release(*, released: int, N: int, k: int) -> range:
    """The shared order's positions (0-based) the next "label these k next" releases: the next k after the
    `released` ones, never past N. It reads no label and no verdict (the module's docstring: why)."""
    if k < 0 or released < 0 or released > N:
        raise ValueError(f"cannot release {k} more after {released} of {N}")
    return range(released, min(N, released + k))


def sided_from_levels(at_alpha: str | None, at_alpha_over_k: str | None) -> str | None:
    """One gating criterion's decision with its PASS test at alpha and its FAIL test at alpha / k, read from its first
    decisions at two symmetric levels (what the gate has stored: the figures at alpha per side, and at alpha / k per
    side, `fail_confidence`). With t_pass(a), t_fail(a) the labels at which each capital first crosses 1 / a:

    - PASS at alpha: t_pass(alpha) <= t_fail(alpha) <= t_fail(alpha / k), so PASS.
    - PASS at alpha / k: t_pass(alpha) <= t_pass(alpha / k) <= t_fail(alpha / k), so PASS.
    - otherwise FAIL at alpha / k: the FAIL capital crossed k / alpha, so FAIL. (Exact when alpha is undecided; after
      a FAIL at alpha the PASS capital may in principle have crossed 1 / alpha in between, which needs the two tests
      to contradict each other; FAIL then is still a valid FAIL at alpha / k.)
    - a FAIL at alpha alone is not enough: undecided until the FAIL capital reaches k / alpha (or PASS wins).

    So a PASS always rests on a PASS capital past 1 / alpha and a FAIL on a FAIL capital past k / alpha: the two
    sides' levels hold. With k = 1 both arguments are the same decision, returned as it is."""
    if PASS in (at_alpha, at_alpha_over_k):
        return PASS
    return FAIL if at_alpha_over_k == FAIL else None
