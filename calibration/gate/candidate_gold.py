"""What the candidate's own gold says of each gating criterion (issue 40: never pass against the candidate's own
evidence): where the policy decides on an audit of the candidate, the open audit plan's decision
(`decided_audits`); elsewhere the bound its gold puts on the pass rate (`candidate_gold_bounds`), and whether that
refutes the criterion or holds the gate back (`against_gold`).
"""

from __future__ import annotations

import dataclasses

import pandas as pd

from calibration.audits.figures import AuditFigures
from calibration.audits.plans import open_plan_for
from calibration.audits.stored_figures import FiguresUpdating, current_figures
from calibration.gate.criterion_bounds import AuditLevels, Gating
from calibration.gate.request import CannotDecide
from calibration.stats.audit_shared import fail_confidence, side_levels, sided_from_levels
from calibration.stats.candidate_evidence import ASSUMES_CALIBRATION, GoldBound, TransportTest, gold_bound
from calibration.stats.metrics import FAIL, NOT_APPLICABLE, PASS
from calibration.stats.pass_rate import CorrectedPassRate
from calibration.stats.policy import AUDIT, CORRECTED_LOWER, GateThresholds, Tightening
from evals.models import EvalSet, RubricVersion
from judging.models import JudgeConfig


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


def _current(plan, *, minimum: float, confidence: float) -> AuditFigures:
    """The plan's figures of today's gold (issue 37): stored by a worker, or asked of one with a bounded wait;
    never figures of another gold state. CannotDecide ("undecided: figures updating") when the wait runs out."""
    try:
        return current_figures(plan, minimum=minimum, confidence=confidence)
    except FiguresUpdating as exc:
        raise CannotDecide(str(exc)) from None


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
            figures = _current(plan, minimum=thresholds.min_pass_rate, confidence=thresholds.confidence)
            if figures.lower is not None and figures.upper is not None and not figures.outputs_outside_order:
                interval = (figures.lower, figures.upper)
        bound = gold_bound(
            passes=passes, fails=fails, unknown=unknown, confidence=thresholds.confidence, audit=interval
        )
        bounds[g.criterion_id] = bound
    return bounds


def audit_gate_size(gating: list[Gating], tightening: Tightening) -> int:
    """k: how many of the candidate's gating criteria are decided by audits of the candidate (their plans share the
    eval set's one order). Each one's FAIL side runs at alpha / k (calibration/stats/audit_shared.py)."""
    return sum(tightening.applied_to(g.policy, g.key).decide_on == AUDIT for g in gating)


def decided_audits(
    gating: list[Gating],
    tightening: Tightening,
    eval_set: EvalSet,
    rubric_version: RubricVersion,
    judge_config: JudgeConfig,
    agent_version: str | None,
) -> tuple[dict[object, AuditFigures], dict[object, AuditLevels], dict[object, str]]:
    """The figures of the open audit plan of each criterion whose policy decides on an audit, at the stricter of
    the applied thresholds and the plan's (at the plan's own, its kept decision), with the levels the gate reads them
    at: of k such criteria, each PASS at alpha and each FAIL at alpha / k, the latter read from the plan's figures at
    the confidence whose alpha per side is alpha / k (their own stored row, of today's gold like the other).
    A plan started in a group (groups.py) is read at the group's stored levels where they are stricter (its k).
    CannotDecide if one has no plan or has a kept decision that today's gold reads otherwise, or one is not decided
    yet at those levels while none failed; where one failed, the undecided ones come back in the third dict (why)."""
    audits: dict[object, AuditFigures] = {}
    levels: dict[object, AuditLevels] = {}
    waiting: dict[object, str] = {}  # criteria whose audit has not decided yet: why, in words
    gate_k = audit_gate_size(gating, tightening)
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
        minimum = max(thresholds.min_pass_rate, plan.min_pass_rate)
        confidence = max(thresholds.confidence, plan.confidence)
        k = gate_k
        group = plan.group if plan.group is not None and plan.group.closed_at is None else None
        if group is not None:
            # A plan started in a group is read at the levels the group stored at its start (issue 37 item 3), or
            # stricter ones where this gate's k or confidence is larger: the union bound needs alpha / k of the larger.
            k, confidence = max(gate_k, group.k), max(confidence, group.confidence)
        figures = _current(plan, minimum=minimum, confidence=confidence)
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
        alpha_pass, alpha_fail = side_levels(confidence=confidence, k=k)
        # The FAIL side's figures: the same plan at alpha / k per side (k = 1: the figures above).
        strict = (
            figures
            if k == 1
            else _current(plan, minimum=minimum, confidence=fail_confidence(confidence=confidence, k=k))
        )
        sided = AuditLevels(k, alpha_pass, alpha_fail, figures.decided, strict.decided)
        decided = sided_from_levels(figures.decided, strict.decided)
        if decided is None:
            waits = strict if figures.decided else figures  # a FAIL at alpha waits for the FAIL side at alpha / k
            at_alpha = (
                f"; it reads FAIL at {alpha_pass:.4g} per side, but the gate of {k} criteria decided by audits reads "
                f"each FAIL at {alpha_fail:.4g}"
                if figures.decided == FAIL
                else ""
            )
            waiting[g.criterion_id] = (
                f"undecided: about {waits.expected_more_labels} more labels by the forecast ({g.key}: audit plan "
                f"{plan.pk}, labeled {figures.n_labeled} of {figures.N}, anytime-valid interval "
                f"[{figures.lower:.3f}, {strict.upper:.3f}] around the minimum {figures.min_pass_rate:g}{at_alpha}); "
                f"release more with manage.py audit_plan next {plan.pk}"
            )
            continue
        # The criterion's decision at its two levels; its upper bound is the one its FAIL side reads (alpha / k).
        chosen = figures if decided == figures.decided else strict
        audits[g.criterion_id] = dataclasses.replace(
            figures, decided=decided, decided_at=chosen.decided_at, decided_by=chosen.decided_by, upper=strict.upper
        )
        levels[g.criterion_id] = sided
    # The release fails as soon as one criterion fails (its FAIL at alpha / k), whatever the others still wait for;
    # otherwise a criterion still undecided leaves the gate undecided.
    if waiting and not any(f.decided == FAIL for f in audits.values()):
        raise CannotDecide(next(iter(waiting.values())))
    return audits, levels, waiting
