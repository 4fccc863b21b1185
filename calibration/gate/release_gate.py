"""The release gate: judge verdicts on a release candidate, gating criteria only, lower bounds of pass rates.

Conjunctive: the gate passes only if every gating criterion's lower bound on its pass rate reaches the
minimum AND its ERROR rate stays at or under the maximum. Which lower bound is the lead's choice, stored
with the mark (calibration/stats/policy.py): the pass rate corrected for the judge's own errors (Rogan-Gladen,
with the TPR and TNR of the calibration the mark relied on; the default), or the observed Wilson bound.
Both are always reported. Or, per mark, the audit of the candidate itself (decide_on "audit", audits/plans.py):
the open audit plan for the criterion, candidate, agent version and judge config decides, met on PASS and not met on
FAIL at the policy's minimum and confidence (or the plan's, where stricter); while it is undecided, or without a
plan, the gate cannot decide (exit 2) and says how many more labels the forecast expects. The audit borrows nothing
from the calibration and its judge errors cost labels, not validity, so its criterion's ERROR rate is reported
but does not decide. "k of n criteria met" is
reported as information, never as the verdict (a strong criterion must not pay for a weak one).
The binding criterion is the one that decided: if the gate failed, the unmet criterion furthest from
its limits (the most negative of lower bound - minimum pass rate and maximum error rate - error
rate); if it passed, the criterion whose lower bound is closest to the minimum (then the one closest
to the maximum error rate). Ties go to the earlier criterion in rubric order.

Each gating criterion is held to the policy the lead stored with its mark (calibration/stats/policy.py); a
caller may only tighten it, and a looser value is refused (PolicyRefused) before anything is stored.

Cannot decide (exit 2) is not a failure of the agent: no approved gating criteria, a gating
criterion with no verdicts at all, a gating criterion whose lead requires a clean probe run (of the
judge on the mark's calibration eval set) and whose newest one is not clean, a model or instrument
config whose verdicts came from an import (possible only before the provenance rule), or a name that
matches nothing.

Every decision says where its verdicts came from (`provenance`): each run whose verdicts are current, with
how many, and for imported ones how they came in (manage.py import_verdicts, or a push and its token).
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass
from pathlib import PurePath

import pandas as pd

from calibration.audits.figures import AuditFigures, plan_figures
from calibration.audits.plans import open_plan_for
from calibration.data import frames
from calibration.data.frame_reading import confusion_cells, current_runs, current_verdicts
from calibration.models import GateResult, GatingMark
from calibration.report import robustness
from calibration.stats.candidate_evidence import (
    ASSUMES_CALIBRATION,
    GoldBound,
    TransportTest,
    calibration_cells,
    gold_bound,
    transport_test,
)
from calibration.stats.metrics import (
    BINARY,
    ERROR,
    FAIL,
    NOT_APPLICABLE,
    PASS,
    CorrectedPassRate,
    corrected_pass_rate,
    fmt,
    wilson_interval,
)
from calibration.stats.policy import AUDIT, CORRECTED_LOWER, WILSON_LOWER, GateThresholds, Tightening
from evals.lookup import eval_set_named
from evals.models import EvalSet, RubricVersion
from evals.validators import UnknownName
from judging.judge_lookup import judge_named
from judging.models import JudgeConfig, JudgeRun
from labeling.gold import derive_gold

EXIT_PASSED, EXIT_FAILED, EXIT_UNDECIDED = 0, 1, 2


class CannotDecide(Exception):
    """The gate has nothing it may decide on; the message says why and what to do."""


@dataclass(frozen=True)
class Gating:
    """One gating criterion as its mark says: the lead's policy and the calibration the mark relied on
    (the eval set and the confusion cells of the report row stored with the mark; None if it holds none)."""

    criterion_id: int
    key: str
    policy: GateThresholds
    calibration_eval_set: str = ""
    calibration: tuple[int, int, int, int] | None = None

    @classmethod
    def from_mark(cls, criterion_id: int, key: str, policy: GateThresholds, eval_set: str, figures: dict) -> Gating:
        return cls(criterion_id, key, policy, eval_set, calibration_cells(figures))


@dataclass(frozen=True)
class GateCriterion:
    criterion: str
    n: int  # PASS + FAIL verdicts
    passes: int
    errors: int
    verdicts: int  # every current verdict, whatever its outcome
    pass_rate: float | None
    wilson_lower: float | None
    error_rate: float | None
    met: bool
    pass_margin: float  # the deciding lower bound - minimum pass rate (-inf without PASS/FAIL verdicts)
    error_margin: float  # maximum error rate - error rate
    thresholds: GateThresholds  # what applied: the lead's policy, tightened by the caller
    corrected: CorrectedPassRate | None = None  # None: the mark holds no calibration counts
    calibration_eval_set: str = ""
    calibration_n: int = 0
    audit: AuditFigures | None = None  # the audit plan's figures, where the policy decides on it
    # The judge's TPR and TNR on the candidate's gold against the calibration's, tested (candidate_evidence.py);
    # None where the mark holds no calibration counts.
    transport: TransportTest | None = None
    # What the candidate's own gold says of its pass rate (None: no gold PASS/FAIL there), and, where it refutes the
    # minimum or contradicts the deciding bound, why the criterion is not met (`refuted`) or not passed (`held`).
    gold: GoldBound | None = None
    refuted: str = ""
    held: str = ""

    @property
    def binding_key(self) -> tuple:
        if not self.met:
            refuted = -math.inf if self.refuted else math.inf  # the candidate's gold outranks any bound's margin
            return (0, min(self.pass_margin, self.error_margin, refuted))
        return (1, self.pass_margin, self.error_margin)

    def as_dict(self) -> dict:
        c = self.corrected
        head = {k: getattr(self, k) for k in ("criterion", "n", "passes", "errors", "pass_rate", "wilson_lower")}
        corrected = {
            "corrected_pass_rate": c.estimate if c else None,
            "corrected_lower": c.lower if c else None,
            "corrected_upper": c.upper if c else None,
            "corrected_assumes": ASSUMES_CALIBRATION,
            "judge_tpr": c.tpr if c else None,
            "judge_tnr": c.tnr if c else None,
            "calibration_eval_set": self.calibration_eval_set,
            "calibration_n": self.calibration_n,
        }
        a = self.audit
        audit = {
            "audit_lower": a.lower if a else None,
            "audit_upper": a.upper if a else None,
            "audit_estimate": a.estimate if a else None,
            "audit_decided": a.decided if a else None,
            "audit_plan": a.plan if a else None,
            "audit_n_labeled": a.n_labeled if a else None,
            "audit_N": a.N if a else None,
        }
        evidence = {
            "candidate_gold": self.gold.as_dict() if self.gold else None,
            "refuted_by_gold": self.refuted or None,
            "held_back": self.held or None,
            "transport": self.transport.as_dict() if self.transport else None,
            "notes": evidence_lines(self),  # the same words as the text answer and the page
        }
        tail = {k: getattr(self, k) for k in ("error_rate", "met")}
        return {
            **head,
            **corrected,
            **self.transport_dict(),
            **audit,
            **evidence,
            **tail,
            **self.thresholds.as_dict(),
        }

    def transport_dict(self) -> dict:
        """The transport check's flat keys (docs/calibration.md, The release gate): the rates on both sides with
        their Wilson intervals for reading, and the test's warning; null without calibration counts."""
        t = self.transport
        confidence = 1.0 - t.level if t else 0.95

        def ci(hits: int, n: int) -> list[float] | None:
            w = wilson_interval(hits, n, confidence)
            return None if w.lower is None or w.upper is None else [w.lower, w.upper]

        return {
            "judge_tpr_ci": ci(t.tpr.calibration_hits, t.tpr.calibration_n) if t else None,
            "judge_tnr_ci": ci(t.tnr.calibration_hits, t.tnr.calibration_n) if t else None,
            "candidate_gold_n": t.candidate_n if t else None,
            "candidate_tpr": t.tpr.candidate if t else None,
            "candidate_tpr_ci": ci(t.tpr.candidate_hits, t.tpr.candidate_n) if t else None,
            "candidate_tnr": t.tnr.candidate if t else None,
            "candidate_tnr_ci": ci(t.tnr.candidate_hits, t.tnr.candidate_n) if t else None,
            "transport_warning": t.warning if t else None,
        }


JUDGE_RUN, IMPORT, PUSH, PAGE = "judge_run", "import", "push", "page"


@dataclass(frozen=True)
class VerdictSource:
    """One run whose verdicts the gate decided on. `origin`: judge_run (the config's own run), import
    (manage.py import_verdicts, or an import made before provenance was recorded: then `file` is empty), page (a
    lead's file on the Import page) or push (POST /api/verdicts, with its token)."""

    run: int
    origin: str
    verdicts: int  # current verdict samples of the gating criteria from this run
    mode: str
    label: str
    file: str
    finished_at: str | None
    token: dict | None  # {"id", "project"} of the token that pushed it

    def as_dict(self) -> dict:
        return dataclasses.asdict(self)

    def describe(self) -> str:
        label = f' "{self.label}"' if self.label else ""
        if self.origin == JUDGE_RUN:
            how = f"judge run, {dict(JudgeRun.Mode.choices).get(self.mode, self.mode).lower()}"
        elif self.origin == PUSH:
            token = self.token or {}
            how = f"pushed with token {token.get('project', '?')!r} (id {token.get('id', '?')}), {self.file}"
        elif self.origin == PAGE:
            how = f"imported on the Import page, {self.file}"
        else:
            how = f"imported with manage.py import_verdicts, {self.file}" if self.file else "imported, how not recorded"
        return f"run {self.run}{label} ({how}): {self.verdicts:,}"


def verdict_sources(run_counts: dict[int, int]) -> tuple[VerdictSource, ...]:
    """The runs of `run_counts` (run id -> current verdicts) with their provenance, oldest first; one query."""
    runs = JudgeRun.objects.filter(pk__in=list(run_counts)).select_related("push__token").order_by("pk")
    return tuple(_source(run, run_counts[run.pk]) for run in runs)


def _source(run: JudgeRun, verdicts: int) -> VerdictSource:
    push = getattr(run, "push", None)
    if run.mode != JudgeRun.Mode.IMPORT:
        origin = JUDGE_RUN
    elif push is not None or run.imported_via == JudgeRun.ImportedVia.PUSH:
        origin = PUSH
    elif run.imported_via == JudgeRun.ImportedVia.PAGE:
        origin = PAGE
    else:
        origin = IMPORT
    return VerdictSource(
        run=run.pk,
        origin=origin,
        verdicts=verdicts,
        mode=run.mode,
        label=run.label,
        file=PurePath(run.source_name).name,  # the file's name: a server path tells a CI log nothing it should know
        finished_at=run.finished_at.isoformat() if run.finished_at else None,
        token={"id": push.token_id, "project": push.token.project} if push is not None else None,
    )


def refuse_imports_into_a_run_config(judge_config: JudgeConfig, sources: tuple[VerdictSource, ...]) -> None:
    """CannotDecide if a model or instrument config's verdicts came from imports or pushes, which only a
    database from before the provenance rule can hold: they speak in the name of an instrument that never said
    them. Its own newer run supersedes them item by item."""
    if judge_config.takes_imports:
        return
    imported = [s for s in sources if s.origin != JUDGE_RUN]
    if imported:
        raise CannotDecide(
            f"{sum(s.verdicts for s in imported):,} of the verdicts to decide on came into judge config "
            f"{judge_config.name} ({judge_config.get_backend_display()}) from imports, not from its own judge runs: "
            + "; ".join(s.describe() for s in imported)
            + ". A model or instrument config's verdicts come only from its own runs (docs/security.md, Verdict "
            "provenance): run the judge on this eval set again, and its verdicts supersede these"
        )


@dataclass(frozen=True)
class GateDecision:
    passed: bool
    binding_criterion: str | None
    criteria: tuple[GateCriterion, ...]
    tightening: Tightening
    provenance: tuple[VerdictSource, ...] = ()  # where the verdicts came from (run_gate fills it in)

    @property
    def met_count(self) -> int:
        return sum(c.met for c in self.criteria)

    @property
    def gating_count(self) -> int:
        return len(self.criteria)

    @property
    def held(self) -> tuple[str, ...]:
        """Why the gate may not pass though no criterion failed: each held criterion's reason."""
        return tuple(f"{c.criterion}: {c.held}" for c in self.criteria if c.held)

    @property
    def undecided(self) -> bool:
        """Not passed, and every unmet criterion is held back rather than failed: the gate cannot decide (exit 2)."""
        return not self.passed and all(c.met or c.held for c in self.criteria)

    @property
    def reason(self) -> str:
        return "undecided: " + "; ".join(self.held) if self.undecided else ""

    @property
    def exit_code(self) -> int:
        return EXIT_PASSED if self.passed else EXIT_UNDECIDED if self.undecided else EXIT_FAILED

    def as_dict(self) -> dict:
        return {
            "passed": None if self.undecided else self.passed,
            **({"error": self.reason} if self.undecided else {}),
            "binding_criterion": self.binding_criterion,
            "met_count": self.met_count,
            "gating_count": self.gating_count,
            "criteria": [c.as_dict() for c in self.criteria],
            "provenance": [s.as_dict() for s in self.provenance],
        }


def undecided_dict(reason: str) -> dict:
    """The answer when the gate cannot decide: the same for `gate --format json` and the HTTP API."""
    return {"passed": None, "error": reason}


def _corrected(g: Gating, passes: int, n: int, thresholds: GateThresholds) -> CorrectedPassRate | None:
    """The corrected pass rate; CannotDecide if the policy decides on it and the calibration cannot give it."""
    corrected = corrected_pass_rate(passes, n, g.calibration, thresholds.confidence) if g.calibration else None
    if thresholds.decide_on != CORRECTED_LOWER or n == 0:
        return corrected  # without PASS/FAIL verdicts the criterion is simply not met
    if corrected is None or corrected.lower is None:
        why = corrected.reason if corrected else "the mark holds no calibration counts"
        raise CannotDecide(
            f"{g.key}: its gate policy decides on the pass rate corrected for the judge's errors, but {why} "
            f"(calibration on {g.calibration_eval_set or 'an unknown eval set'}); mark it again on a calibration "
            "with gold PASS and FAIL items, or have the lead decide on the observed lower bound"
        )
    return corrected


def evaluate(
    verdicts: pd.DataFrame,
    gating: list[Gating],
    tightening: Tightening,
    outputs: int | None = None,
    audits: dict[object, AuditFigures] | None = None,
    candidate_cells: dict[object, tuple[int, int, int, int]] | None = None,
    gold: dict[object, GoldBound] | None = None,
) -> GateDecision:
    """Pure: current verdicts (criterion, judge) of the gating criteria, each with the lead's policy and its
    calibration -> the decision. PolicyRefused if `tightening` loosens any criterion's policy.

    `outputs` is how many outputs the release candidate has; a gating criterion with fewer verdicts
    than that cannot be decided (an incomplete run could otherwise pass on the part that was judged).
    `audits`: criterion id -> the decided audit figures of the criteria whose policy decides on an audit.
    `candidate_cells`: criterion id -> the judge's confusion cells against gold on the candidate (none: zeros),
    for the transport test of the criteria whose mark holds calibration counts.
    `gold`: criterion id -> what the candidate's own gold says of its pass rate (`against_gold` reads it).
    """
    audits = audits or {}
    candidate_cells = candidate_cells or {}
    gold = gold or {}
    applied = {g.key: tightening.applied_to(g.policy, g.key) for g in gating}
    if not gating:
        raise CannotDecide("no criteria are approved as gating for this rubric version and judge config")
    by_criterion = {crit: g["judge"] for crit, g in verdicts.groupby("criterion", sort=False)}
    missing = [g.key for g in gating if g.criterion_id not in by_criterion]
    if len(missing) == len(gating):
        raise CannotDecide("there are no verdicts for any gating criterion: run the judge on this eval set first")
    if missing:
        raise CannotDecide(f"gating criteria without any verdict: {', '.join(missing)}; run the judge on them first")
    if outputs is not None:
        short = [
            f"{g.key} ({outputs - len(by_criterion[g.criterion_id])} of {outputs})"
            for g in gating
            if len(by_criterion[g.criterion_id]) < outputs
        ]
        if short:
            raise CannotDecide(
                "outputs without a verdict: " + ", ".join(short) + "; the judge run is incomplete "
                "(finish it, or pass --agent-version to gate one agent version)"
            )
    rows = []
    for g in gating:
        thresholds = applied[g.key]
        outcomes = by_criterion[g.criterion_id]
        total = len(outcomes)
        passes, n = int(outcomes.eq(PASS).sum()), int(outcomes.isin(BINARY).sum())
        errors = int(outcomes.eq(ERROR).sum())
        wilson = wilson_interval(passes, n, thresholds.confidence).lower
        corrected = _corrected(g, passes, n, thresholds)
        audit = audits.get(g.criterion_id) if thresholds.decide_on == AUDIT else None
        if audit is not None:  # it decided at the plan's thresholds where they are stricter: report those
            thresholds = dataclasses.replace(thresholds, min_pass_rate=audit.min_pass_rate, confidence=audit.confidence)
        bound = {CORRECTED_LOWER: corrected.lower if corrected else None, WILSON_LOWER: wilson}.get(
            thresholds.decide_on, audit.lower if audit else None
        )
        error_rate = errors / total
        pass_margin = -math.inf if bound is None else bound - thresholds.min_pass_rate
        error_margin = thresholds.max_error_rate - error_rate
        if audit is not None:
            met = audit.decided == PASS
        else:
            met = pass_margin >= 0 and error_margin >= 0
        transport = None
        if g.calibration:
            cells = candidate_cells.get(g.criterion_id, (0, 0, 0, 0))
            transport = transport_test(calibration=g.calibration, candidate=cells, level=1.0 - thresholds.confidence)
        refuted, held = against_gold(gold.get(g.criterion_id), thresholds, corrected, transport)
        if refuted or (held and met):
            met = False
        else:
            held = ""  # a criterion that fails on its own bound fails; nothing is held back
        rows.append(
            GateCriterion(
                criterion=g.key,
                n=n,
                passes=passes,
                errors=errors,
                verdicts=total,
                pass_rate=passes / n if n else None,
                wilson_lower=wilson,
                error_rate=error_rate,
                met=met,
                pass_margin=pass_margin,
                error_margin=error_margin,
                thresholds=thresholds,
                corrected=corrected,
                calibration_eval_set=g.calibration_eval_set,
                calibration_n=sum(g.calibration) if g.calibration else 0,
                audit=audit,
                transport=transport,
                gold=gold.get(g.criterion_id),
                refuted=refuted,
                held=held,
            )
        )
    binding = min(rows, key=lambda r: r.binding_key)  # min() keeps the first of equals: rubric order
    return GateDecision(all(r.met for r in rows), binding.criterion, tuple(rows), tightening)


def against_gold(
    gold: GoldBound | None,
    thresholds: GateThresholds,
    corrected: CorrectedPassRate | None,
    transport: TransportTest | None,
) -> tuple[str, str]:
    """Pure: (refuted, held) for one criterion, each a reason or "" (issue 40: never pass against the candidate's
    own evidence). Refuted, so not met: the candidate's gold shows the pass rate below the minimum without an
    assumption it cannot check (every output has gold, an audit's random order, or even if every output without
    gold passes). Held back, so the gate cannot pass: the labeled outputs would refute the minimum if they were a
    random sample; or, deciding on the corrected bound, the gold allows less than it claims or the transport test
    finds the judge's errors moved. An audit decides on the gold already: nothing to add."""
    minimum = thresholds.min_pass_rate
    if thresholds.decide_on == AUDIT:
        return "", ""
    if gold is not None and gold.refutes(minimum):
        return f"the candidate's own gold refutes the minimum {minimum:g}: {gold.in_words()}", ""
    if gold is not None and gold.would_refute_if_random(minimum):
        return "", (
            f"the candidate's gold would refute the minimum {minimum:g} if its labeled outputs were a random sample "
            f"({gold.in_words()}); an audit of the candidate (a random sample) decides"
        )
    if thresholds.decide_on != CORRECTED_LOWER:
        return "", ""
    lower = corrected.lower if corrected else None
    if gold is not None and gold.upper is not None and lower is not None and gold.upper < lower:
        said = "" if gold.is_random else " if its labeled outputs are a random sample"
        return "", (
            f"the corrected lower bound {lower:.3f} ({ASSUMES_CALIBRATION}) is above the {gold.upper:.3f} that the "
            f"candidate's gold allows{said} ({gold.in_words()}); an audit of the candidate decides"
        )
    if transport is not None and transport.warning:
        return "", f"{transport.warning}; an audit of the candidate decides without them"
    return "", ""


def gating_criteria(rubric_version: RubricVersion, judge_config: JudgeConfig) -> list[Gating]:
    """Every gating criterion with the lead's policy and the calibration its mark relied on, in rubric order."""
    marks = GatingMark.objects.for_instrument(rubric_version, judge_config).order_by("criterion__order", "criterion_id")
    policy_fields = ("min_pass_rate", "max_error_rate", "confidence", "decide_on")
    rows = marks.values_list("criterion_id", "criterion__key", "calibration_eval_set__name", "figures", *policy_fields)
    return [
        Gating.from_mark(crit, key, GateThresholds(*policy), eval_set, figures or {})
        for crit, key, eval_set, figures, *policy in rows
    ]


def run_gate(
    *,
    eval_set: EvalSet,
    rubric_version: RubricVersion,
    judge_config: JudgeConfig,
    tightening: Tightening,
    agent_version: str | None = None,
) -> GateDecision:
    gating = gating_criteria(rubric_version, judge_config)
    if not gating:
        approved = rubric_version.status == RubricVersion.Status.APPROVED
        raise CannotDecide(
            f"no criteria of {rubric_version.ref} are approved as gating with judge {judge_config.name}"
            + ("" if approved else " (the rubric version is not approved)")
        )
    unclean = robustness.gate_refusal(rubric_version, judge_config)
    if unclean:
        raise CannotDecide(f"gating criteria whose lead requires a clean probe run have none: {unclean}")
    scope = frames.Scope(eval_set, rubric_version, agent_version)
    stored = frames.load_verdicts(scope, judge_config)
    stored = stored[stored["criterion"].isin({g.criterion_id for g in gating})]
    sources = verdict_sources(current_runs(stored))
    refuse_imports_into_a_run_config(judge_config, sources)
    outputs = len(frames.load_agent_versions(scope))
    audits = decided_audits(gating, tightening, eval_set, rubric_version, judge_config, agent_version)
    current = current_verdicts(stored)
    # The candidate's own gold (an audit's, or labels made for any other reason): its bound and the transport test.
    policies = {c.pk: c.gold_policy for c in frames.criteria_of(rubric_version)}
    gold = derive_gold(frames.load_labels(scope), frames.load_adjudicated(scope), policies)
    cells = confusion_cells(current, gold)
    bounds = candidate_gold_bounds(
        gold,
        gating,
        tightening,
        outputs,
        audit_plan=dict(eval_set=eval_set, judge_config=judge_config, agent_version=agent_version),
    )
    decision = evaluate(current, gating, tightening, outputs=outputs, audits=audits, candidate_cells=cells, gold=bounds)
    return dataclasses.replace(decision, provenance=sources)


def candidate_gold_bounds(
    gold: pd.DataFrame, gating: list[Gating], tightening: Tightening, outputs: int, *, audit_plan: dict
) -> dict[object, GoldBound]:
    """Per gating criterion, what the candidate's gold says of its pass rate (candidate_evidence.gold_bound) at the
    applied confidence: where an open audit plan covers the criterion, its anytime-valid interval; else the exact
    interval of the labeled outputs, which only a census makes random."""
    bounds: dict[object, GoldBound] = {}
    for g in gating:
        thresholds = tightening.applied_to(g.policy, g.key)
        if thresholds.decide_on == AUDIT:
            continue  # the audit decides on this gold already
        outcomes = gold.loc[gold["criterion"] == g.criterion_id, "gold"]
        passes, fails = int(outcomes.eq(PASS).sum()), int(outcomes.eq(FAIL).sum())
        if passes + fails == 0:
            continue
        unknown = max(outputs - passes - fails - int(outcomes.eq(NOT_APPLICABLE).sum()), 0)
        plan = open_plan_for(criterion_id=g.criterion_id, **audit_plan) if unknown else None
        interval = None
        if plan is not None:
            figures = plan_figures(plan, minimum=thresholds.min_pass_rate, confidence=thresholds.confidence)
            if figures.lower is not None and figures.upper is not None and not figures.outputs_outside_order:
                interval = (figures.lower, figures.upper)
        bound = gold_bound(
            passes=passes, fails=fails, unknown=unknown, confidence=thresholds.confidence, audit=interval
        )
        bounds[g.criterion_id] = bound
    return bounds


def decided_audits(
    gating: list[Gating],
    tightening: Tightening,
    eval_set: EvalSet,
    rubric_version: RubricVersion,
    judge_config: JudgeConfig,
    agent_version: str | None,
) -> dict[object, AuditFigures]:
    """The figures of the open audit plan of each criterion whose policy decides on an audit, at the stricter of
    the applied thresholds and the plan's (at the plan's own, its kept decision); CannotDecide if one has no plan,
    is not decided yet, or has a kept decision that today's gold reads otherwise."""
    audits: dict[object, AuditFigures] = {}
    for g in gating:
        thresholds = tightening.applied_to(g.policy, g.key)
        if thresholds.decide_on != AUDIT:
            continue
        plan = open_plan_for(
            criterion_id=g.criterion_id, eval_set=eval_set, judge_config=judge_config, agent_version=agent_version
        )
        agent = f" --agent-version {agent_version}" if agent_version else ""
        if plan is None:
            raise CannotDecide(
                f"undecided: {g.key} decides on an audit of the candidate and {eval_set.name} has no open audit plan "
                f"for it with judge {judge_config.name}; a lead starts one: manage.py audit_plan create --eval-set "
                f"{eval_set.name} --rubric {rubric_version.ref} --judge {judge_config.name} --criterion {g.key}{agent} "
                "--by LEAD"
            )
        figures = plan_figures(
            plan,
            minimum=max(thresholds.min_pass_rate, plan.min_pass_rate),
            confidence=max(thresholds.confidence, plan.confidence),
        )
        if figures.outputs_outside_order:
            raise CannotDecide(
                f"undecided: {figures.outputs_outside_order} outputs of {eval_set.name} came after audit plan "
                f"{plan.pk}'s order and are not in it, so its audit does not cover the candidate; close the plan and "
                "move the queue to start a new order"
            )
        if figures.kept is not None and figures.kept.differs:
            # The kept decision stands on the plan, but a release is not passed or failed on it while today's gold
            # reads otherwise: the lead looks at the changed gold first (issue 41).
            raise CannotDecide(
                f"undecided: {g.key}'s audit plan {plan.pk} {figures.kept.words}; the gate does not decide on it "
                "while the gold reads otherwise: a lead reviews the changed gold on the plan's page, then closes the "
                "plan and starts a new one"
            )
        if figures.decided is None:
            raise CannotDecide(
                f"undecided: about {figures.expected_more_labels} more labels by the forecast ({g.key}: audit plan "
                f"{plan.pk}, labeled {figures.n_labeled} of {figures.N}, anytime-valid interval "
                f"[{figures.lower:.3f}, {figures.upper:.3f}] around the minimum {figures.min_pass_rate:g}); release "
                f"more with manage.py audit_plan next {plan.pk}"
            )
        audits[g.criterion_id] = figures
    return audits


@dataclass(frozen=True)
class GateRequest:
    eval_set: str
    rubric: str
    judge: str
    agent_version: str | None
    tightening: Tightening


@dataclass(frozen=True)
class GateOutcome:
    """What a caller shows: the decision, or why there is none, and the stored record."""

    decision: GateDecision | None
    reason: str
    record: GateResult

    @property
    def exit_code(self) -> int:
        return self.decision.exit_code if self.decision else EXIT_UNDECIDED


def gate_and_record(request: GateRequest, *, source: str, token=None, asked_by=None) -> GateOutcome:
    """Resolve the names, run the gate, and store the result (also when it cannot decide). The command line,
    the HTTP API and the gate page all call this; `asked_by` is the person on the gate page, `token` the API's
    token (api.GateToken) that asked over HTTP.

    PolicyRefused (a looser threshold than the lead's) propagates and nothing is stored. Over HTTP an
    unknown name is not followed by the names that exist (a token holder learns nothing beyond its scope).
    """
    resolved: dict = {}
    decision, reason = None, ""
    say_known = source != GateResult.Source.HTTP
    try:
        resolved["eval_set"] = eval_set_named(request.eval_set, say_known=say_known)
        resolved["rubric_version"] = RubricVersion.objects.by_ref(request.rubric, say_known=say_known)
        resolved["judge_config"] = judge_named(request.judge, say_known=say_known)
        if token is not None and resolved["rubric_version"].pk != token.rubric_version_id:
            raise CannotDecide(f"this token may only gate on {token.rubric_version.ref}")
        decision = run_gate(**resolved, tightening=request.tightening, agent_version=request.agent_version)
    except (UnknownName, CannotDecide) as exc:
        reason = str(exc)
    if decision is not None and decision.undecided:
        reason = decision.reason  # held back by the candidate's own gold: the criteria are kept with the reason
    record = GateResult.objects.create(
        decision=(
            GateResult.Decision.UNDECIDED
            if decision is None or decision.undecided
            else GateResult.Decision.PASSED
            if decision.passed
            else GateResult.Decision.FAILED
        ),
        source=source,
        eval_set_name=request.eval_set,
        rubric_ref=request.rubric,
        judge_name=request.judge,
        agent_version=request.agent_version or "",
        min_pass_rate=request.tightening.min_pass_rate,
        max_error_rate=request.tightening.max_error_rate,
        confidence=request.tightening.confidence,
        binding_criterion=(decision.binding_criterion or "") if decision else "",
        met_count=decision.met_count if decision else 0,
        gating_count=decision.gating_count if decision else 0,
        result=decision.as_dict() if decision else {},
        reason=reason,
        token=token,
        asked_by=asked_by,
        **resolved,
    )
    return GateOutcome(decision, reason, record)


def evidence_lines(c: GateCriterion) -> list[str]:
    """What the candidate's own gold says of one criterion, in words (the text answer and the gate page)."""
    lines = []
    if c.refuted:
        lines.append(f"not met: {c.refuted}")
    elif c.held:
        lines.append(f"held back: {c.held}")
    elif c.gold is not None:
        lines.append(f"the candidate's gold: {c.gold.in_words()}")
    if c.transport is not None and c.transport.candidate_n and not (c.held and c.transport.warning):
        lines.append(f"transport test: {c.transport.in_words()}")
    if c.thresholds.decide_on == CORRECTED_LOWER and c.gold is None:
        lines.append(
            f"decided on the corrected bound with no gold on the candidate: it {ASSUMES_CALIBRATION}, unchecked; an "
            "audit of the candidate does not rest on it"
        )
    return lines


def render_text(outcome: GateOutcome) -> str:
    if outcome.decision is None:
        return f"CANNOT DECIDE: {outcome.reason}"
    d = outcome.decision
    head = "CANNOT DECIDE" if d.undecided else "PASSED" if d.passed else "FAILED"
    lines = [
        f"{head}: every gating criterion must have the lower bound its policy decides "
        f"on (at its confidence) >= its minimum pass rate and an ERROR rate <= its maximum ({d.tightening.describe()})",
        f"{'criterion':<28} {'n':>6} {'passes':>7} {'pass rate':>9} {'lower':>7} {'corr':>6} {'c.lower':>7} "
        f"{'a.lower':>7} {'decides':>8} {'min':>5} {'conf':>5} {'errors':>6} {'err rate':>8} {'max':>5}  met",
    ]
    for c in d.criteria:
        t = c.thresholds
        corr = c.corrected
        decides = {CORRECTED_LOWER: "corrected", AUDIT: "audit"}.get(t.decide_on, "observed")
        lines.append(
            f"{c.criterion:<28} {c.n:>6} {c.passes:>7} {fmt(c.pass_rate):>9} {fmt(c.wilson_lower):>7} "
            f"{fmt(corr.estimate if corr else None):>6} {fmt(corr.lower if corr else None):>7} "
            f"{fmt(c.audit.lower if c.audit else None):>7} {decides:>8} "
            f"{t.min_pass_rate:>5g} {t.confidence:>5g} {c.errors:>6} {fmt(c.error_rate):>8} {t.max_error_rate:>5g}  "
            f"{'yes' if c.met else 'held' if c.held else 'NO'}"
        )
    lines.append(
        "lower: Wilson bound of the judge's pass rate; corr / c.lower: the pass rate corrected for the judge's own "
        f"errors (Rogan-Gladen, its TPR and TNR on the calibration the mark relied on: it {ASSUMES_CALIBRATION}) and "
        "its lower bound; a.lower: the anytime-valid lower bound of an audit of the candidate (decides on its own "
        "decision, PASS or FAIL)"
    )
    for c in d.criteria:
        lines.extend(f"{c.criterion}: {said}" for said in evidence_lines(c))
    lines.append(f"binding criterion: {d.binding_criterion}")
    lines.append("verdicts from: " + ("; ".join(s.describe() for s in d.provenance) or "none"))
    lines.append(f"{d.met_count} of {d.gating_count} criteria met (information only: the gate is conjunctive)")
    return "\n".join(lines)
