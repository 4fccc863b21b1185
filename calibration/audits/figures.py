"""An audit plan's figures (`plan_figures` -> `AuditFigures`): its labels and the judge's verdicts, read and handed to
the pure statistics of calibration/stats/audit_stats.py and audit_strata.py for the decision and the forecast of the
labels still to come. A Celery worker runs it (stored_figures.py, issue 37) and stores what it returns; the pages,
the API, the CLI and Home show the stored figures, and the gate decides on them once they are of the gold it reads
(`read_plan(...).state`, a digest of every input, without the statistics).

The plan stores its parts, and its decision once first reached (kept.py): from then on that is the plan's
decision, and later gold is read beside it.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import asdict, dataclass
from datetime import datetime

import numpy as np

from calibration.audits import kept, plan_signals
from calibration.audits.plan_outputs import (
    by_output,
    gold_of,
    gold_value,
    population_of,
    stratified_reading,
    verdict_value,
)
from calibration.data import content_cache, frames
from calibration.data.frame_reading import current_verdicts
from calibration.models import AuditPlan
from calibration.stats import (
    audit_forecast,
    audit_heading,
    audit_predictor,
    audit_stats,
    jury_forecast,
    strata_plan,
)
from calibration.stats.metrics import ABSTAIN
from evals.models import Output
from labeling import label_frames
from labeling.audit_order import DEFAULT_RELEASE
from labeling.models import AuditOrder

# Forecasts are Monte Carlo; a fixed seed keeps the figures the same on every read of the same labels.
FORECAST_SIMS = 1000
FORECAST_SEED = 0
# Each simulation may replay the order up to N labels, so on large candidates fewer simulations: about this
# many simulated labels in all, and never fewer than FORECAST_MIN_SIMS (a chance read to within about
# +-3.5 points). 1,000 simulations up to 4,000 outputs, 200 from 20,000 (about 5 s near the minimum).
FORECAST_CELLS = 4_000_000
FORECAST_MIN_SIMS = 200


def forecast_sims(N: int) -> int:
    """The simulations a forecast of a plan of N outputs runs (FORECAST_CELLS)."""
    return max(FORECAST_MIN_SIMS, min(FORECAST_SIMS, FORECAST_CELLS // max(N, 1)))


@dataclass(frozen=True)
class AuditFigures:
    """Everything a page, the API, the CLI or the gate shows of a plan, read now."""

    plan: int
    criterion: str
    eval_set: str
    rubric: str
    judge: str
    agent_version: str
    design: str  # "uniform" or "stratified"
    seed: int
    min_pass_rate: float
    confidence: float
    order: tuple[str, ...]  # case ids of the population, in the plan's order
    N: int
    # Stratified only (else None): the outputs the judge passed and the rest, and the labels in each so far.
    strata_sizes: tuple[int, int] | None
    strata_labeled: tuple[int, int] | None
    released: int  # positions of the population the queue may hand out
    n_labeled: int  # the labeled prefix (pending items in it included)
    n_gold: int
    n_pending: int  # no gold yet, or gold Can't tell, in the labeled prefix: counted against either decision
    n_gold_cant_tell: int  # of n_pending: gold Can't tell (settled, yet no pass or fail to count)
    # Their outputs, in the order: each counts against either decision until a reviewer overrules the Can't tell.
    cant_tell_outputs: tuple[int, ...]
    n_not_applicable: int  # gold N/A: outside the pass rate (passes / (passes + fails), as in the gate)
    estimate: float | None  # the PPI++ estimate of the pass rate (fixed-n; for reading, not deciding)
    lower: float  # the anytime-valid interval: what the decision rests on
    upper: float
    # The plan's decision: the kept one once kept (kept.py), else today's reading. At thresholds other than
    # the plan's (a gate's stricter ones) it is always today's reading at those thresholds.
    decided: str | None  # PASS, FAIL or None (not yet)
    decided_at: int | None  # the label it came at
    decided_by: str | None  # "exact" or "test"
    min_gold: int
    forecast: audit_forecast.AuditForecast
    labels_saved: int  # outputs of the population that were not labeled (so far, if undecided)
    outputs_outside_order: int  # outputs of the candidate made after the order: the audit does not cover them
    reads_now: str | None  # today's reading at these thresholds (what `decided` was before decisions were kept)
    kept: kept.KeptDecision | None  # the plan's kept decision against today's gold, once decided
    # Which side the audit is heading for before it decides (audit_heading: its own tests read at 80% confidence),
    # as a dict (side, decided, confidence, in_words). Figures stored before it existed read None.
    heading: dict | None = None
    # What the tests read beside gold (issue 38), as a dict: kind ("jury" or "verdict"), in_words, and for a uniform
    # plan its signals with each one's correlation with the gold settled so far and weight now (predictor_reading).
    # Figures stored before it existed read None.
    predictor: dict | None = None

    @property
    def n_settled(self) -> int:
        """Gold items the tests' minimum counts: PASS, FAIL and N/A."""
        return self.n_gold + self.n_not_applicable

    @property
    def n_awaiting_gold(self) -> int:
        """Outputs of the labeled prefix whose gold has yet to come (a second label or an adjudication)."""
        return self.n_pending - self.n_gold_cant_tell

    @property
    def expected_more_labels(self) -> int:
        """The forecast's expected labels to a decision, rounded up (0 once decided)."""
        return int(math.ceil(self.forecast.expected_labels))

    def as_dict(self) -> dict:
        """The JSON of `audit_plan show --format json` and of GET /api/audit-plans/{id}: one dict for both."""
        figures = asdict(self)
        figures["order"] = list(self.order)
        figures["cant_tell_outputs"] = list(self.cant_tell_outputs)
        figures["kept"] = self.kept.as_dict() if self.kept else None
        figures["saved_share"] = self.labels_saved / self.N if self.N else None
        return figures

    @classmethod
    def from_dict(cls, stored: dict) -> AuditFigures:
        """The figures back from `as_dict()`'s JSON (the stored row of stored_figures.py)."""
        d = {name: stored[name] for name in cls.__dataclass_fields__ if name in stored}
        d["order"] = tuple(d["order"])
        d["cant_tell_outputs"] = tuple(d["cant_tell_outputs"])
        for pair in ("strata_sizes", "strata_labeled"):
            d[pair] = tuple(d[pair]) if d[pair] is not None else None
        d["forecast"] = audit_forecast.AuditForecast(**d["forecast"])
        if d["kept"] is not None:
            k = {name: d["kept"][name] for name in kept.KeptDecision.__dataclass_fields__}
            k["decided_at"] = datetime.fromisoformat(k["decided_at"])
            d["kept"] = kept.KeptDecision(**k)
        return cls(**d)

    def summary(self, *, is_open: bool) -> dict:
        """The plan's figures without its order, as the candidate's calibration report holds them."""
        return {
            "plan": self.plan,
            "criterion": self.criterion,
            "judge": self.judge,
            "agent_version": self.agent_version,
            "open": is_open,
            "min_pass_rate": self.min_pass_rate,
            "confidence": self.confidence,
            "n_labeled": self.n_labeled,
            "N": self.N,
            "estimate": self.estimate,
            "interval": [self.lower, self.upper],
            "decided": self.decided,
            "forecast": asdict(self.forecast),
        }


def decided_words(f: AuditFigures) -> str:
    """Why a decided plan takes no more labels, said the same on the page, the API and the command."""
    return (
        f"Audit plan {f.plan} is decided: {f.decided} at label {f.decided_at} of {f.N}. Its labels are no longer "
        "needed; close it to keep it for the record."
    )


@dataclass(frozen=True)
class PlanReading:
    """What a plan's figures are computed from, read (a few queries, whatever N) but not yet computed."""

    state: str  # content_cache's digest of every input: equal states give equal figures
    n_gold: int  # settled gold items read (PASS, FAIL, N/A)
    finish: Callable[[], AuditFigures]  # the statistics (seconds on a large plan): a worker's part


def plan_figures(
    plan: AuditPlan, *, k: int = DEFAULT_RELEASE, minimum: float | None = None, confidence: float | None = None
) -> AuditFigures:
    """The plan's figures from the labels and verdicts as they are now: `read_plan`, then its statistics. Only a
    worker (stored_figures.py) and tests call it; no web request does."""
    return read_plan(plan, k=k, minimum=minimum, confidence=confidence).finish()


def read_plan(
    plan: AuditPlan, *, k: int = DEFAULT_RELEASE, minimum: float | None = None, confidence: float | None = None
) -> PlanReading:
    """The plan's inputs from the labels and verdicts as they are now; a few queries, whatever N.

    `minimum` and `confidence` override the plan's (the gate decides at its own, never looser, thresholds).
    The population is the order's outputs (of the plan's agent version, if any), in position order. A uniform
    plan's labeled prefix runs to the last released position holding a label or gold of the criterion; a
    stratified plan's labels are the outputs it released, in release order, up to the last one holding either.
    Within them an item without gold is pending (counted against whichever decision it would help;
    audit_stats); gold Can't tell stays pending too, since a pass rate needs PASS or FAIL (a reviewer may settle
    it). Gold N/A leaves the pass rate, which is the gate's: passes / (passes + fails).

    The first read that finds the plan decided at its own thresholds keeps the decision (kept.py); from then
    on `decided` is the kept one, and `kept` says how today's gold reads against it.
    """
    minimum = plan.min_pass_rate if minimum is None else minimum
    confidence = plan.confidence if confidence is None else confidence
    at_plan = (minimum, confidence) == (plan.min_pass_rate, plan.confidence)
    criterion = plan.criterion
    agent_version = plan.agent_version or None
    population = population_of(plan.order_id, plan.agent_version)
    outputs = Output.objects.filter(case__eval_set=plan.eval_set)
    if agent_version:
        outputs = outputs.filter(agent_version=agent_version)
    outside = outputs.exclude(audit_positions__order_id=plan.order_id).count()
    scope = label_frames.Scope(plan.eval_set, criterion.rubric_version, agent_version)
    labels = label_frames.load_labels(scope)
    gold = gold_of(plan, labels)
    touched = set(labels.loc[labels["criterion"] == criterion.pk, "output"]) | set(gold)
    ids = [output_id for output_id, _, _ in population]
    sizes: tuple[int, int] | None = None
    counts: tuple[int, int] | None = None
    if plan.design == AuditPlan.Design.STRATIFIED:
        reading = stratified_reading(plan, gold, population)
        released = len(reading.released)
        n_labeled = max((i + 1 for i, output_id in enumerate(reading.released) if output_id in touched), default=0)
        labeled = reading.released[:n_labeled]
        path = reading.path[:n_labeled]
        gold_values = reading.gold_released[:n_labeled]
        sizes = reading.sizes
        counts = (int(np.sum(path == 0)), int(np.sum(path == 1)))
        # The labels still to come, in the order the test will count them: the released ones not labeled yet, then
        # the rest in order position (what the next releases will be).
        ahead = reading.path[n_labeled:].tolist() + [h for _, h in reading.unreleased]
        kind = "audit-stratified"
        parts: tuple = (gold_values, path.tolist(), ahead, sizes, minimum, confidence, k, FORECAST_SEED)

        def statistics() -> tuple[audit_stats.AuditDecision, audit_forecast.AuditForecast]:
            return _stratified_statistics(gold_values, path, ahead, sizes, minimum=minimum, confidence=confidence, k=k)

        def at_plans_thresholds() -> audit_stats.AuditDecision:
            return strata_plan.stratified_decision(
                gold=gold_values, path=path, sizes=sizes, minimum=plan.min_pass_rate, confidence=plan.confidence
            )

        def predictor() -> dict:
            words = plan_signals.STRATIFIED_WORDS
            return {"kind": AuditPlan.Predictor.VERDICT, "in_words": words, "signals": [], "jury": None}
    else:
        order_released = AuditOrder.objects.filter(pk=plan.order_id).values_list("released", flat=True).get()
        open_positions = [i for i, (_, position, _) in enumerate(population) if position <= order_released]
        released = len(open_positions)
        n_labeled = max((i + 1 for i in open_positions if ids[i] in touched), default=0)
        labeled = ids[:n_labeled]
        gold_values = [gold_value(gold.get(output_id)) for output_id in labeled]
        if plan.predictor == AuditPlan.Predictor.JURY:
            # The signals frozen at the start (plan_signals.py): a judge re-run since never moves them.
            jury = plan_signals.frozen(plan, len(ids))
            f = jury.predictor.scores
            usable = jury.usable()
            kind = "audit-jury"
            parts = (gold_values, jury.digest, minimum, confidence, k, forecast_sims(len(ids)), FORECAST_SEED)

            def statistics() -> tuple[audit_stats.AuditDecision, audit_forecast.AuditForecast]:
                return _jury_statistics(gold_values, f, usable, minimum=minimum, confidence=confidence, k=k)

            def at_plans_thresholds() -> audit_stats.AuditDecision:
                return audit_predictor.jury_decision(
                    gold=gold_values, f=f, minimum=plan.min_pass_rate, confidence=plan.confidence
                )

            def predictor() -> dict:
                return plan_signals.predictor_reading(plan, gold_values, jury.predictor, jury.raw, jury.samples)
        else:
            judge = by_output(current_verdicts(frames.load_verdicts(scope, plan.judge_config)), criterion.pk, "judge")
            verdict_values = [verdict_value(judge.get(output_id)) for output_id in ids]
            # On a large candidate near its minimum the forecast runs for seconds: computed once per gold, verdicts
            # and thresholds (content_cache), in a worker (stored_figures.py).
            kind = "audit"
            parts = (gold_values, verdict_values, minimum, confidence, k, forecast_sims(len(ids)), FORECAST_SEED)

            def statistics() -> tuple[audit_stats.AuditDecision, audit_forecast.AuditForecast]:
                return _statistics(gold_values, verdict_values, minimum=minimum, confidence=confidence, k=k)

            def at_plans_thresholds() -> audit_stats.AuditDecision:
                return audit_stats.audit_decision(
                    gold=gold_values, verdicts=verdict_values, minimum=plan.min_pass_rate, confidence=plan.confidence
                )

            def predictor() -> dict:
                one = {plan.judge_config.name: [None if math.isnan(v) else v for v in verdict_values]}
                return plan_signals.predictor_reading(plan, gold_values, audit_predictor.predictor(one), one, None)

    # The figures read the plan's own rows too (its order's released count, the outputs made after the order): part
    # of the state, so that a release or a late output makes the stored figures stale as a gold label does.
    state = content_cache.digest(kind, plan.pk, *parts, released, outside, len(population))

    def finish() -> AuditFigures:
        decision, forecast = content_cache.computed(kind, parts, statistics)
        kept_now = _kept(plan, decision if at_plan else None, at_plans_thresholds, labeled, gold)
        shown = kept_now if kept_now is not None and at_plan else None
        cant_tell = tuple(output_id for output_id in labeled if gold.get(output_id) == ABSTAIN)
        return AuditFigures(
            plan=plan.pk,
            criterion=criterion.key,
            eval_set=plan.eval_set.name,
            rubric=criterion.rubric_version.ref,
            judge=plan.judge_config.name,
            agent_version=plan.agent_version,
            design=plan.design,
            seed=plan.order.seed,
            min_pass_rate=minimum,
            confidence=confidence,
            order=tuple(case_id for _, _, case_id in population),
            N=len(population),
            strata_sizes=sizes,
            strata_labeled=counts,
            released=released,
            n_labeled=n_labeled,
            n_gold=decision.n_gold,
            n_pending=decision.n_pending,
            n_gold_cant_tell=len(cant_tell),
            cant_tell_outputs=cant_tell,
            n_not_applicable=decision.n_not_applicable,
            estimate=decision.estimate.estimate,
            lower=decision.lower,
            upper=decision.upper,
            decided=shown.decided if shown else decision.decided,
            decided_at=shown.at_label if shown else decision.decided_at,
            decided_by=shown.decided_by if shown else decision.decided_by,
            min_gold=decision.min_gold,
            forecast=forecast,
            labels_saved=len(population) - n_labeled,
            outputs_outside_order=outside,
            reads_now=decision.decided,
            kept=kept_now,
            heading=audit_heading.heading(decision).as_dict(),
            predictor=predictor(),
        )

    n_gold = sum(1 for value in gold.values() if value != ABSTAIN)
    return PlanReading(state=state, n_gold=n_gold, finish=finish)


def _kept(
    plan: AuditPlan,
    decision: audit_stats.AuditDecision | None,
    at_plans_thresholds: Callable[[], audit_stats.AuditDecision],
    labeled: list[int],
    gold: dict[int, str],
) -> kept.KeptDecision | None:
    """The plan's kept decision read against today's gold, keeping `decision` (read at the plan's thresholds, None
    at others) if it decides and none is kept yet. Today's reading at the plan's thresholds is `decision`'s, or
    computed (without a forecast) where the figures were asked at other thresholds."""
    row = kept.stored(plan)
    if row is None:
        if decision is None or decision.decided is None:
            return None
        row = kept.keep(plan, decision, kept.gold_pairs(labeled, gold))
    reads_now = decision.decided if decision is not None else at_plans_thresholds().decided
    return kept.read(row, gold, reads_now)


# A stratified forecast replays every simulation with its own tests: fewer simulations than a uniform one's, and
# fewer still on large candidates (200 up to 2,000 outputs, then about 400,000 / N, at least 50).
STRATIFIED_FORECAST_SIMS = 200


def stratified_forecast_sims(N: int) -> int:
    return max(50, min(STRATIFIED_FORECAST_SIMS, 400_000 // max(N, 1)))


def _stratified_statistics(
    gold: list[float],
    path: np.ndarray,
    ahead: list[int],
    sizes: tuple[int, int],
    *,
    minimum: float,
    confidence: float,
    k: int,
) -> tuple[audit_stats.AuditDecision, audit_forecast.AuditForecast]:
    decision = strata_plan.stratified_decision(
        gold=gold, path=path, sizes=sizes, minimum=minimum, confidence=confidence
    )
    if decision.decided:
        return decision, audit_forecast.AuditForecast.settled(
            k=k, decided=decision.decided, n_sims=stratified_forecast_sims(sizes[0] + sizes[1])
        )
    forecast = strata_plan.stratified_forecast(
        gold=gold,
        path=path,
        ahead=ahead,
        sizes=sizes,
        minimum=minimum,
        confidence=confidence,
        k=k,
        n_sims=stratified_forecast_sims(sizes[0] + sizes[1]),
        seed=FORECAST_SEED,
    )
    return decision, forecast


def _jury_statistics(
    gold: list[float], f: np.ndarray, usable: np.ndarray, *, minimum: float, confidence: float, k: int
) -> tuple[audit_stats.AuditDecision, audit_forecast.AuditForecast]:
    """The jury's decision and its forecast, which replays the jury's own test on the signals, with gold modelled by
    strata of the jury's score (jury_forecast.py). `usable`: the outputs with at least one signal."""
    decision = audit_predictor.jury_decision(gold=gold, f=f, minimum=minimum, confidence=confidence)
    sims = forecast_sims(f.shape[0])
    if decision.decided:
        return decision, audit_forecast.AuditForecast.settled(k=k, decided=decision.decided, n_sims=sims)
    forecast = jury_forecast.jury_forecast(
        gold=gold, f=f, usable=usable, minimum=minimum, confidence=confidence, k=k, n_sims=sims, seed=FORECAST_SEED
    )
    return decision, forecast


def _forecast(
    gold: list[float], verdicts: list[float], *, minimum: float, confidence: float, k: int
) -> audit_forecast.AuditForecast:
    return audit_forecast.audit_forecast(
        gold=gold,
        verdicts=verdicts,
        minimum=minimum,
        confidence=confidence,
        k=k,
        n_sims=forecast_sims(len(verdicts)),
        seed=FORECAST_SEED,
    )


def _statistics(
    gold: list[float], verdicts: list[float], *, minimum: float, confidence: float, k: int
) -> tuple[audit_stats.AuditDecision, audit_forecast.AuditForecast]:
    decision = audit_stats.audit_decision(gold=gold, verdicts=verdicts, minimum=minimum, confidence=confidence)
    return decision, _forecast(gold, verdicts, minimum=minimum, confidence=confidence, k=k)
