"""One gating criterion on the candidate: the policy and calibration its mark holds (`Gating`), and what the gate
found of it (`GateCriterion`: its rates, the lower bounds of its pass rate, the transport check of the judge's
errors, an audit's figures and the candidate's own gold, with the words that say it).

Which bound decides is the lead's choice, stored with the mark (calibration/stats/policy.py): the pass rate
corrected for the judge's own errors (`corrected_bound`: Rogan-Gladen, with the TPR and TNR of the calibration the
mark relied on), the observed Wilson bound, or an audit of the candidate (candidate_gold.py).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from calibration.audits.design_words import design_and_predictor
from calibration.audits.figures import AuditFigures
from calibration.gate.request import CannotDecide
from calibration.stats.candidate_evidence import ASSUMES_CALIBRATION, GoldBound, TransportTest, calibration_cells
from calibration.stats.metrics import wilson_interval
from calibration.stats.pass_rate import CorrectedPassRate, corrected_pass_rate
from calibration.stats.policy import CORRECTED_LOWER, GateThresholds


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
class AuditLevels:
    """The levels the gate decides a criterion's audit at, as one of the k gating criteria decided by audits of the
    candidate (calibration/stats/audit_shared.py): its PASS side at alpha (the intersection-union test needs no
    correction), its FAIL side at alpha / k (the union bound: a release that meets every minimum is failed at most
    alpha of the time, not k alpha). What each level decided on its own is kept, to say why."""

    k: int
    alpha_pass: float
    alpha_fail: float
    at_alpha: str | None  # the plan's figures at alpha per side (its kept decision at its own thresholds)
    at_alpha_over_k: str | None  # its figures at alpha / k per side (the same figures when k = 1)

    KEYS = ("audit_k", "audit_alpha_pass", "audit_alpha_fail")

    def as_dict(self) -> dict:
        return {
            "audit_k": self.k,
            "audit_alpha_pass": self.alpha_pass,
            "audit_alpha_fail": self.alpha_fail,
        }

    def in_words(self) -> str:
        if self.k == 1:
            return (
                f"the audit decides PASS and FAIL at {self.alpha_pass:.4g} per side (the only gating criterion decided "
                "by an audit)"
            )
        said = (
            f"the audit decides PASS at {self.alpha_pass:.4g} and FAIL at {self.alpha_fail:.4g} "
            f"(alpha / k, k = {self.k} gating criteria decided by audits: a release that meets every minimum is "
            f"failed at most {self.alpha_pass:.4g} of the time)"
        )
        if self.at_alpha == "FAIL" and self.at_alpha_over_k != "FAIL":
            said += f"; its plan reads FAIL at {self.alpha_pass:.4g}, not yet at {self.alpha_fail:.4g}"
        return said


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
    audit_levels: AuditLevels | None = None  # the levels its audit decides at in this gate (None without an audit)
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

    @property
    def audit_in_words(self) -> str:
        """The audit's design and predictor in a lead's words (empty without an audit)."""
        a = self.audit
        if a is None:
            return ""
        kind = a.predictor["kind"] if a.predictor else None
        # Figures stored before the predictor was (None) cannot name a jury's configs.
        extra = [s["name"] for s in a.predictor.get("signals", [])[1:]] if a.predictor else None
        return design_and_predictor(a.design, kind, extra)

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
            # What the audit's tests read beside gold (issue 38): "uniform" or "stratified"; "jury" or "verdict".
            "audit_design": a.design if a else None,
            "audit_predictor": a.predictor["kind"] if a and a.predictor else None,
            "audit_in_words": self.audit_in_words or None,  # the two above and the jury's configs, for a lead
            **(self.audit_levels.as_dict() if self.audit_levels else dict.fromkeys(AuditLevels.KEYS)),
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


def corrected_bound(g: Gating, passes: int, n: int, thresholds: GateThresholds) -> CorrectedPassRate | None:
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


def evidence_lines(c: GateCriterion) -> list[str]:
    """What the candidate's own gold says of one criterion, in words (the text answer and the gate page)."""
    lines = [c.audit_levels.in_words()] if c.audit_levels else []
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
