"""The calibration report: per criterion, how well a judge config agrees with gold, beside the
human ceiling, with every excluded item counted and every degenerate case said out loud.

This module reads the report from the database and holds the report objects: `calibration_report`,
`segmented_report` (one per agent version), `rows_on_outputs` (a split's part), `criterion_tiers` and
`human_agreement` load the frames through `calibration/data/frames.py` with a constant number of queries, and
each computes its figures once per content (calibration/data/content_cache.py). The rows themselves are pure
(rows.py: build_rows, CriterionReport), made of their parts (row_parts.py, with the buckets every item lands
in; ceiling.py, the human ceiling and the judge's self-agreement; gold_counts.py), with their warnings
(findings.py); pricing.py holds the price of gating and the transport test of a release candidate.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

import numpy as np
import pandas as pd
from django.utils import timezone

from calibration.audits.plans import plans_to_report
from calibration.audits.stored_figures import stored_figures
from calibration.data import content_cache, frames
from calibration.data.holdout import report_restriction
from calibration.report.ceiling import human_agreement_from_labels
from calibration.report.jury_pricing import jury_fits
from calibration.report.pricing import (
    PriceRow,
    marked_calibrations,
    price_rows,
    priced_candidate,
    transport_rows,
    vote_share_phis,
)
from calibration.report.robustness import probe_results, report_key
from calibration.report.rows import CriterionReport, build_rows, build_tiers
from calibration.stats.candidate_evidence import TransportTest
from calibration.stats.jury_fit import JuryFit
from calibration.stats.metrics import HumanAgreement
from evals.models import Criterion, EvalSet, RubricVersion
from judging.models import JudgeConfig
from judging.probes.results import ProbeResults
from labeling import label_frames

# --- The report objects ------------------------------------------------------------------------------------


@dataclass(frozen=True)
class CalibrationReport:
    eval_set: str
    rubric_version: str
    judge_config: str
    judge_config_hash: str
    model_id: str
    agent_version: str | None
    computed_at: datetime
    rows: tuple[CriterionReport, ...]
    # The newest complete probe run of this calibration (calibration/report/robustness.py); None when there is none.
    probes: ProbeResults | None = None
    # The price of gating per criterion in rubric order (None: not computed, as in a report built from frames alone).
    gating_prices: tuple[PriceRow, ...] | None = None
    # The audit plans on this eval set (as a release candidate): AuditFigures.summary of each; none, no key.
    audit_plans: tuple[dict, ...] = ()
    # As a release candidate: each gating criterion marked on another eval set, with the transport test of the
    # judge's rates here against that calibration's (issue 40); none, no key.
    transport: tuple[tuple[str, TransportTest], ...] = ()
    # "held_out" when the judge's examples came from this eval set: the rows measure the held-out split only
    # (calibration/data/holdout.py), and `split_note` says so. "" (and no keys in meta) for every other report.
    split: str = ""
    split_note: str = ""

    def meta(self) -> dict:
        return {
            "eval_set": self.eval_set,
            "rubric_version": self.rubric_version,
            "judge_config": self.judge_config,
            "judge_config_hash": self.judge_config_hash,
            "model_id": self.model_id,
            "agent_version": self.agent_version,
            "computed_at": self.computed_at.isoformat(),
            **({"split": self.split, "split_note": self.split_note} if self.split else {}),
        }

    def as_dict(self) -> dict:
        # The keys of issue 22 come only where there is something to say, so a report without them is as before.
        extra: dict[str, Any] = {}
        if self.gating_prices is not None:
            extra["gating_price"] = [p.as_dict() for p in self.gating_prices]
        if self.audit_plans:
            extra["audit_plans"] = list(self.audit_plans)
        if self.transport:
            extra["transport"] = [{"criterion": key, **t.as_dict()} for key, t in self.transport]
        return {
            **self.meta(),
            "criteria": [r.as_dict() for r in self.rows],
            "probes": report_key(self.probes),
            **extra,
        }

    def row(self, key: str) -> CriterionReport:
        return next(r for r in self.rows if r.criterion == key)


@dataclass(frozen=True)
class Segment:
    agent_version: str
    rows: tuple[CriterionReport, ...]


@dataclass(frozen=True)
class SegmentedReport:
    """One report per agent version, and per criterion the mean of the per-segment kappas."""

    eval_set: str
    rubric_version: str
    judge_config: str
    judge_config_hash: str
    model_id: str
    computed_at: datetime
    segments: tuple[Segment, ...]
    split_note: str = ""  # as CalibrationReport's: set when every segment measures the held-out split only

    def mean_kappas(self) -> dict[str, dict]:
        out: dict[str, dict] = {}
        for seg in self.segments:
            for row in seg.rows:
                entry = out.setdefault(row.criterion, {"kappas": []})
                if row.judge.kappa is not None:
                    entry["kappas"].append(row.judge.kappa)
        return {
            key: {
                "mean_kappa": float(np.mean(v["kappas"])) if v["kappas"] else None,
                "segments_with_kappa": len(v["kappas"]),
                "segments": len(self.segments),
            }
            for key, v in out.items()
        }

    def as_dict(self) -> dict:
        return {
            "eval_set": self.eval_set,
            "rubric_version": self.rubric_version,
            "judge_config": self.judge_config,
            "judge_config_hash": self.judge_config_hash,
            "model_id": self.model_id,
            "computed_at": self.computed_at.isoformat(),
            "by": "agent_version",
            "segments": [
                {"agent_version": s.agent_version, "criteria": [r.as_dict() for r in s.rows]} for s in self.segments
            ],
            "mean_kappa": self.mean_kappas(),
            **({"split": "held_out", "split_note": self.split_note} if self.split_note else {}),
        }


# --- Read from the database, computed once per content ------------------------------------------------------


def gating_keys(rubric_version: RubricVersion, judge_config: JudgeConfig) -> set[str]:
    from calibration.models import GatingMark

    marks = GatingMark.objects.for_instrument(rubric_version, judge_config)
    return set(marks.values_list("criterion__key", flat=True))


def _criteria(rubric_version: RubricVersion) -> tuple[list[tuple[int, str]], dict[int, str]]:
    """(criterion id, key) in rubric order, and criterion id -> gold policy (one query)."""
    criteria = frames.criteria_of(rubric_version)
    return [(c.id, c.key) for c in criteria], {c.id: c.gold_policy for c in criteria}


def cached_rows(
    *,
    criteria: Sequence[tuple[object, str]],
    labels: pd.DataFrame,
    adjudicated: pd.DataFrame,
    verdicts: pd.DataFrame,
    gating: Iterable[str],
    gold_policies: Mapping[Any, str],
) -> list[CriterionReport]:
    """`build_rows` for these frames, computed once per content (content_cache.py says why that is exact)."""
    gating, policies = sorted(gating), sorted((str(k), str(v)) for k, v in gold_policies.items())
    parts = (criteria, labels, adjudicated, verdicts, gating, policies)
    return content_cache.computed(
        "report-rows",
        parts,
        lambda: build_rows(
            criteria=criteria,
            labels=labels,
            adjudicated=adjudicated,
            verdicts=verdicts,
            gating=gating,
            gold_policies=gold_policies,
        ),
    )


def criterion_tiers(
    *, eval_set: EvalSet, rubric_version: RubricVersion, judge_config: JudgeConfig, agent_version: str | None = None
) -> dict[str, str]:
    """criterion key -> tier on this calibration, at a fraction of the whole report's cost (Home's check of the
    gating marks), computed once per content like the report's rows."""
    scope = label_frames.Scope(eval_set, rubric_version, agent_version)
    criteria, policies = _criteria(rubric_version)
    loaded = (
        label_frames.load_labels(scope),
        label_frames.load_adjudicated(scope),
        frames.load_verdicts(scope, judge_config),
    )
    parts = (criteria, *loaded, sorted((str(k), str(v)) for k, v in policies.items()))
    return content_cache.computed(
        "tiers",
        parts,
        lambda: build_tiers(
            criteria=criteria, labels=loaded[0], adjudicated=loaded[1], verdicts=loaded[2], gold_policies=policies
        ),
    )


def _only(df: pd.DataFrame, output_ids: frozenset[int] | None) -> pd.DataFrame:
    """The rows of these outputs (all of them when None): a report restricted to a split."""
    return df if output_ids is None else df[df["output"].isin(output_ids)]


def rows_on_outputs(
    *, eval_set: EvalSet, rubric_version: RubricVersion, judge_config: JudgeConfig, output_ids: frozenset[int]
) -> list[CriterionReport]:
    """The report's rows measured on these outputs only (one part of a gold split), whatever the judge's guidance."""
    scope = label_frames.Scope(eval_set, rubric_version)
    criteria, policies = _criteria(rubric_version)
    return cached_rows(
        criteria=criteria,
        labels=_only(label_frames.load_labels(scope), output_ids),
        adjudicated=_only(label_frames.load_adjudicated(scope), output_ids),
        verdicts=_only(frames.load_verdicts(scope, judge_config), output_ids),
        gating=gating_keys(rubric_version, judge_config),
        gold_policies=policies,
    )


@dataclass(frozen=True)
class ReportCore:
    """What the report reads from the labels, gold and verdicts (the costly part, which a worker computes and stores
    on a large eval set: report/stored_report.py); the rest of the report is a few small queries."""

    rows: tuple[CriterionReport, ...]
    outputs_judged: int  # outputs with a verdict: the size of the candidate the price of gating is about
    split: str = ""
    split_note: str = ""
    # A judge that samples more than once: per criterion, its vote share's correlation with gold, which a uniform
    # audit reads (issue 38), so the price of gating prices that; None for a judge that samples once.
    vote_share_phis: Mapping[str, float] | None = None
    # Where other judge configs of the workspace have verdicts here: per criterion, the jury a uniform audit could read
    # and its cross-validated R (report/jury_pricing.py), priced beside the judge alone; None where there is none.
    jury_fits: Mapping[str, JuryFit] | None = None


def report_core(
    *,
    eval_set: EvalSet,
    rubric_version: RubricVersion,
    judge_config: JudgeConfig,
    agent_version: str | None = None,
    with_jury: bool = True,
) -> ReportCore:
    """The rows of one eval set x rubric version x judge config (five queries, whatever the size, and one more
    `with_jury`: the other judge configs' verdicts, for the price of gating with a jury, which only a report with its
    audit plans shows)."""
    scope = label_frames.Scope(eval_set, rubric_version, agent_version)
    criteria, policies = _criteria(rubric_version)
    restriction = report_restriction(eval_set=eval_set, rubric_version=rubric_version, judge_config=judge_config)
    only = restriction.output_ids if restriction else None
    verdicts = _only(frames.load_verdicts(scope, judge_config), only)
    labels = _only(label_frames.load_labels(scope), only)
    adjudicated = _only(label_frames.load_adjudicated(scope), only)
    rows = cached_rows(
        criteria=criteria,
        labels=labels,
        adjudicated=adjudicated,
        verdicts=verdicts,
        gating=gating_keys(rubric_version, judge_config),
        gold_policies=policies,
    )
    shares = (
        vote_share_phis(labels=labels, adjudicated=adjudicated, verdicts=verdicts, criteria=criteria, policies=policies)
        if judge_config.samples > 1
        else None
    )
    juries = (
        jury_fits(
            labels=labels,
            adjudicated=adjudicated,
            verdicts=verdicts,
            others=_only(frames.load_other_verdicts(scope, judge_config), only),
            criteria=criteria,
            policies=policies,
        )
        if with_jury
        else {}
    )
    return ReportCore(
        rows=tuple(rows),
        outputs_judged=int(verdicts["output"].nunique()) if len(verdicts) else 0,
        split=restriction.part if restriction else "",
        split_note=restriction.note if restriction else "",
        vote_share_phis=shares,
        jury_fits=juries or None,
    )


def calibration_report(
    *,
    eval_set: EvalSet,
    rubric_version: RubricVersion,
    judge_config: JudgeConfig,
    agent_version: str | None = None,
    with_audit_plans: bool = False,
) -> CalibrationReport:
    """The report for one eval set x rubric version x judge config (five queries, whatever the size, one
    for the newest complete probe run and three more when there is one; one more with the audit plans, for the
    price of gating with a jury).

    `with_audit_plans`: also what the report says of the eval set as a release candidate: its audit plans (one
    query, and one for each plan's figures as a worker stored them, issue 37), the price of gating for the
    candidate it is about and the transport test of the gating marks' calibrations (up to five queries): what the
    report's page, its JSON export, the command and the API show; the overview grid and the approvals, which read
    only the rows, leave them out."""
    core = report_core(
        eval_set=eval_set,
        rubric_version=rubric_version,
        judge_config=judge_config,
        agent_version=agent_version,
        with_jury=with_audit_plans,
    )
    return assemble(
        core,
        eval_set=eval_set,
        rubric_version=rubric_version,
        judge_config=judge_config,
        agent_version=agent_version,
        with_audit_plans=with_audit_plans,
        computed_at=timezone.now(),
    )


def assemble(
    core: ReportCore,
    *,
    eval_set: EvalSet,
    rubric_version: RubricVersion,
    judge_config: JudgeConfig,
    agent_version: str | None,
    with_audit_plans: bool,
    computed_at: datetime,
) -> CalibrationReport:
    """The report from its rows, computed now or stored by a worker (then `computed_at` is when they were)."""
    rows = list(core.rows)
    prices: tuple[PriceRow, ...] | None = None
    transport: tuple[tuple[str, TransportTest], ...] = ()
    plans: list = []
    if with_audit_plans:
        # The price of gating is about a candidate: this eval set, or the newest one where this is the calibration.
        size, which = priced_candidate(
            eval_set=eval_set, rubric_version=rubric_version, judge_config=judge_config, here=core.outputs_judged
        )
        marks = marked_calibrations(rubric_version, judge_config)
        prices = price_rows(
            rows, size, {m.key: m.min_pass_rate for m in marks}, which, core.vote_share_phis, core.jury_fits
        )
        transport = transport_rows(rows, marks, eval_set.pk)
        plans = plans_to_report(eval_set=eval_set, rubric_version_id=rubric_version.pk)
    return CalibrationReport(
        split=core.split,
        split_note=core.split_note,
        eval_set=eval_set.name,
        rubric_version=rubric_version.ref,
        judge_config=judge_config.name,
        judge_config_hash=judge_config.content_hash,
        model_id=judge_config.model_id,
        agent_version=agent_version,
        computed_at=computed_at,
        rows=core.rows,
        probes=probe_results(eval_set=eval_set, rubric_version=rubric_version, judge_config=judge_config),
        gating_prices=prices,
        transport=transport,
        # The figures a worker stored (issue 37); a plan whose first figures are still being computed is left out.
        audit_plans=tuple(
            f.summary(is_open=p.closed_at is None)
            for p, f in ((p, stored_figures([p])[p.pk].figures) for p in plans)
            if f is not None
        ),
    )


def segmented_report(*, eval_set: EvalSet, rubric_version: RubricVersion, judge_config: JudgeConfig) -> SegmentedReport:
    """The report split by agent version: the frames are loaded once and cut in memory."""
    scope = label_frames.Scope(eval_set, rubric_version)
    criteria, policies = _criteria(rubric_version)
    restriction = report_restriction(eval_set=eval_set, rubric_version=rubric_version, judge_config=judge_config)
    only = restriction.output_ids if restriction else None
    labels, adjudicated = (
        _only(label_frames.load_labels(scope), only),
        _only(label_frames.load_adjudicated(scope), only),
    )
    verdicts = _only(frames.load_verdicts(scope, judge_config), only)
    versions = frames.load_agent_versions(scope)
    gating = gating_keys(rubric_version, judge_config)
    segments = []
    for version, outputs in versions.groupby("agent_version", sort=True):
        ids = set(outputs["output"])

        def cut(df: pd.DataFrame, ids: set = ids) -> pd.DataFrame:
            return df[df["output"].isin(ids)]

        rows = cached_rows(
            criteria=criteria,
            labels=cut(labels),
            adjudicated=cut(adjudicated),
            verdicts=cut(verdicts),
            gating=gating,
            gold_policies=policies,
        )
        segments.append(Segment(str(version), tuple(rows)))
    return SegmentedReport(
        eval_set=eval_set.name,
        rubric_version=rubric_version.ref,
        judge_config=judge_config.name,
        judge_config_hash=judge_config.content_hash,
        model_id=judge_config.model_id,
        computed_at=timezone.now(),
        segments=tuple(segments),
        split_note=restriction.note if restriction else "",
    )


def human_agreement(
    *, eval_set: EvalSet | int, rubric_version: RubricVersion | int, agent_version: str | None = None
) -> dict[str, HumanAgreement]:
    """The human ceiling per criterion key, with no judge involved (for progress pages).

    HumanAgreement (metrics.py): the order-free ceiling, the mean pairwise Cohen's kappa over every
    pair of annotators who labeled the same items and Krippendorff's alpha (nominal) over every
    PASS/FAIL annotation, each with a 95% percentile bootstrap over items; and annotator A vs B over
    the items exactly two people labeled PASS/FAIL. None where undefined. Two queries.
    """
    if not isinstance(eval_set, EvalSet):
        eval_set = EvalSet.objects.get(pk=eval_set)
    if not isinstance(rubric_version, RubricVersion):
        rubric_version = RubricVersion.objects.get(pk=rubric_version)
    labels = label_frames.load_labels(label_frames.Scope(eval_set, rubric_version, agent_version))
    criteria = Criterion.objects.filter(rubric_version=rubric_version).order_by("order", "id").values_list("id", "key")
    return human_agreement_from_labels(labels, list(criteria))
