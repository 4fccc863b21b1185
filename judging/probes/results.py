"""A probe run's results, read from its arms' verdicts when asked (never stored), in a fixed number of queries.

Per criterion and probe: the flip rates (judging/probes/flips.py) of the (original, probed) pairs, for the
roles the run's plan recorded; the verdict of an output is the majority of its samples
(judging/sample_majority.py, the rule everywhere else).
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from evals.models import EvalSet, RubricVersion

from ..models import JudgeConfig, JudgeRun, ProbeRun, Verdict
from ..sample_majority import majority
from .flips import (
    CONFIDENCE,
    MAX_FLIP_RATE,
    MIN_DETECTION_RATE,
    ProbeCell,
    ProbeWarning,
    compare,
    criterion_notes,
)
from .registry import MEANINGFUL, NEUTRAL, ORIGINAL
from .runs import status_from

THRESHOLDS = {"max_flip_rate": MAX_FLIP_RATE, "min_detection_rate": MIN_DETECTION_RATE, "confidence": CONFIDENCE}


@dataclass(frozen=True)
class CriterionProbes:
    criterion: str
    cells: tuple[ProbeCell, ...]  # the probes with a role on this criterion, in run order
    notes: tuple[ProbeWarning, ...]  # what the cells cannot show (no control measured, ...)

    @property
    def warnings(self) -> tuple[ProbeWarning, ...]:
        return tuple(w for c in self.cells for w in c.warnings)

    @property
    def warning_codes(self) -> list[str]:
        return [w.code for w in self.warnings]

    def cell(self, probe: str) -> ProbeCell | None:
        return next((c for c in self.cells if c.probe == probe), None)

    def as_dict(self) -> dict:
        return {
            "criterion": self.criterion,
            "warnings": [w.as_dict() for w in self.warnings],
            "notes": [n.as_dict() for n in self.notes],
            "probes": [c.as_dict() for c in self.cells],
        }


@dataclass(frozen=True)
class ProbeResults:
    probe_run: int
    status: str
    created_at: datetime
    eval_set: str
    rubric_version: str
    judge_config: str
    agent_version: str
    outputs: int
    sample_size: int | None
    probes: tuple[dict, ...]  # name, version, summary of each probe, in run order
    criteria: tuple[CriterionProbes, ...]

    @property
    def complete(self) -> bool:
        return self.status == JudgeRun.Status.DONE

    @property
    def thresholds(self) -> dict:
        return THRESHOLDS

    def criterion(self, key: str) -> CriterionProbes | None:
        return next((c for c in self.criteria if c.criterion == key), None)

    def clean_for(self, key: str) -> bool:
        """The run is complete, a neutral probe measured the criterion, and no probe warns about it."""
        found = self.criterion(key)
        return bool(
            self.complete
            and found
            and not found.warnings
            and any(c.role == NEUTRAL and (c.pass_to_fail.n or c.fail_to_pass.n) for c in found.cells)
        )

    def as_dict(self) -> dict:
        return {
            "probe_run": self.probe_run,
            "status": self.status,
            "created_at": self.created_at.isoformat(),
            "eval_set": self.eval_set,
            "rubric_version": self.rubric_version,
            "judge_config": self.judge_config,
            "agent_version": self.agent_version or None,
            "outputs": self.outputs,
            "sample_size": self.sample_size,
            "thresholds": THRESHOLDS,
            "probes": [dict(p) for p in self.probes],
            "criteria": [{**c.as_dict(), "clean": self.clean_for(c.criterion)} for c in self.criteria],
        }


def verdict_table(outcomes: dict[tuple[str, int, str], list[str]]) -> dict[tuple[str, str], dict[int, str]]:
    """(arm, output, criterion) -> sample outcomes, as (arm, criterion) -> output -> the samples' majority."""
    table: dict[tuple[str, str], dict[int, str]] = defaultdict(dict)
    for (arm, output, key), samples in outcomes.items():
        table[(arm, key)][output] = majority(samples).outcome
    return table


def build_criteria(plan: list[dict], keys: list[str], table: dict[tuple[str, str], dict[int, str]]):
    """Pure: every criterion's cells from the plan's roles and the verdict table."""
    out = []
    for key in keys:
        original = table.get((ORIGINAL, key), {})
        cells = []
        for entry in plan:
            role = NEUTRAL if key in entry[NEUTRAL] else MEANINGFUL if key in entry[MEANINGFUL] else None
            if role is None:
                continue
            probed = table.get((entry["name"], key), {})
            pairs = [(original[o], outcome) for o, outcome in sorted(probed.items()) if o in original]
            cells.append(
                compare(pairs, probe=entry["name"], version=entry["version"], role=role, summary=entry["summary"])
            )
        out.append(CriterionProbes(key, tuple(cells), criterion_notes(cells)))
    return tuple(out)


def _load(
    probe_run: ProbeRun,
) -> tuple[Sequence[Mapping[str, Any]], dict[int, str], dict[tuple[str, int, str], list[str]]]:
    """The arms, the rubric's criteria by id, and every verdict's outcome: three queries."""
    arms = list(probe_run.judge_runs.values("pk", "probe", "status"))
    criteria = dict(probe_run.rubric_version.criteria.order_by("order").values_list("pk", "key"))
    outcomes: dict[tuple[str, int, str], list[str]] = defaultdict(list)
    rows = Verdict.objects.filter(run_id__in=[a["pk"] for a in arms]).order_by("sample")
    for probe, output, criterion, outcome in rows.values_list("probe", "output_id", "criterion_id", "outcome"):
        outcomes[(probe, output, criteria[criterion])].append(outcome)
    return arms, criteria, outcomes


def results_of(probe_run: ProbeRun) -> ProbeResults:
    """The results of a probe run (its eval set, rubric version and judge config loaded, or one query each)."""
    arms, criteria, outcomes = _load(probe_run)
    return ProbeResults(
        probe_run=probe_run.pk,
        status=status_from([a["status"] for a in arms]),
        created_at=probe_run.created_at,
        eval_set=probe_run.eval_set.name,
        rubric_version=probe_run.rubric_version.ref,
        judge_config=probe_run.judge_config.name,
        agent_version=probe_run.agent_version,
        outputs=probe_run.outputs,
        sample_size=probe_run.sample_size,
        probes=tuple({k: e[k] for k in ("name", "version", "summary")} for e in probe_run.plan),
        criteria=build_criteria(probe_run.plan, list(criteria.values()), verdict_table(outcomes)),
    )


def latest_complete(*, eval_set: EvalSet, rubric_version: RubricVersion, judge_config: JudgeConfig) -> ProbeRun | None:
    """The newest probe run of this eval set, rubric version and judge config whose every arm is done."""
    unfinished = [s for s in JudgeRun.Status.values if s != JudgeRun.Status.DONE]
    return (
        ProbeRun.objects.filter(eval_set=eval_set, rubric_version=rubric_version, judge_config=judge_config)
        .exclude(judge_runs__status__in=unfinished)
        .select_related("eval_set", "rubric_version__rubric", "judge_config")
        .order_by("-pk")
        .first()
    )


def pairs_of(probe_run: ProbeRun, probe: str, criterion_id: int) -> list[tuple[int, str, str]]:
    """(output id, original verdict, probed verdict) of one probe on one criterion, by output id: one query."""
    rows = (
        Verdict.objects.filter(run__probe_run=probe_run, run__probe__in=(ORIGINAL, probe), criterion_id=criterion_id)
        .order_by("sample")
        .values_list("probe", "output_id", "outcome")
    )
    outcomes: dict[tuple[str, int, str], list[str]] = defaultdict(list)
    for arm, output, outcome in rows:
        outcomes[(arm, output, "")].append(outcome)
    table = verdict_table(outcomes)
    original, probed = table.get((ORIGINAL, ""), {}), table.get((probe, ""), {})
    return [(o, original[o], outcome) for o, outcome in sorted(probed.items()) if o in original]
