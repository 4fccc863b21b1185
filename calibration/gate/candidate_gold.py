"""What the candidate's own gold says of each gating criterion (issue 40: never pass against the candidate's own
evidence): where the policy decides on an audit of the candidate, the open audit plan's decision
(`decided_audits`); elsewhere the bound its gold puts on the pass rate (`candidate_gold_bounds`), and whether that
refutes the criterion or holds the gate back (`against_gold`).
"""

from __future__ import annotations

import pandas as pd

from calibration.audits.figures import AuditFigures
from calibration.audits.plans import open_plan_for
from calibration.audits.stored_figures import FiguresUpdating, current_figures
from calibration.gate.criterion_bounds import Gating
from calibration.gate.request import CannotDecide
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
        figures = _current(
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
