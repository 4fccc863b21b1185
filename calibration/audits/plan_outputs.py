"""An audit plan's outputs and their gold as its statistics take them: the population in the order's positions,
a stratified plan's releases and what is left to release, the gold of the plan's criterion now, and outcomes as
numbers (1 PASS, 0 FAIL, NaN without a usable one).
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import pandas as pd

from calibration.data import frames
from calibration.models import AuditPlan
from calibration.stats import audit_predictor, audit_stats
from calibration.stats.metrics import FAIL, NOT_APPLICABLE, PASS
from judging.models import JudgeConfig
from labeling import label_frames
from labeling.gold import derive_gold
from labeling.models import AuditOrderItem


def population_of(order_id: int, agent_version: str) -> list[tuple[int, int, str]]:
    """(output id, position, case id) of the plan's outputs in order position: the order's, of the agent version."""
    items = AuditOrderItem.objects.filter(order_id=order_id)
    if agent_version:
        items = items.filter(output__agent_version=agent_version)
    return list(items.order_by("position").values_list("output_id", "position", "output__case__case_id"))


@dataclass(frozen=True)
class StratifiedReading:
    """A stratified plan's labels as its statistics take them."""

    strata: str
    sizes: tuple[int, int]
    stratum_outputs: tuple[list[int], list[int]]  # each stratum's outputs, in order position
    released: list[int]  # the outputs released by the plan, in release order
    path: np.ndarray  # their strata
    gold_released: list[float]  # their gold now (NaN pending or Can't tell)
    unreleased: list[tuple[int, int]]  # the rest (output, stratum), in order position: the next releases


def stratified_reading(
    plan: AuditPlan, gold: dict[int, str] | None = None, population: list[tuple[int, int, str]] | None = None
) -> StratifiedReading:
    """`gold` and `population` when the caller has read them already."""
    population = population_of(plan.order_id, plan.agent_version) if population is None else population
    gold = gold_of(plan) if gold is None else gold
    stratum_outputs: tuple[list[int], list[int]] = ([], [])
    for (output_id, _, _), h in zip(population, plan.strata, strict=True):
        stratum_outputs[int(h)].append(output_id)
    path = np.array([int(h) for h in plan.path], dtype=np.int8)
    taken = [0, 0]
    released = []
    for h in path:
        released.append(stratum_outputs[h][taken[h]])
        taken[h] += 1
    out = set(released)
    unreleased = [(o, int(h)) for (o, _, _), h in zip(population, plan.strata, strict=True) if o not in out]
    return StratifiedReading(
        strata=plan.strata,
        sizes=(len(stratum_outputs[0]), len(stratum_outputs[1])),
        stratum_outputs=stratum_outputs,
        released=released,
        path=path,
        gold_released=[gold_value(gold.get(output_id)) for output_id in released],
        unreleased=unreleased,
    )


def gold_of(plan: AuditPlan, labels: pd.DataFrame | None = None) -> dict[int, str]:
    """The gold of the plan's criterion on the candidate now, by output (`labels`: the scope's, if read already)."""
    criterion = plan.criterion
    scope = label_frames.Scope(plan.eval_set, criterion.rubric_version, plan.agent_version or None)
    labels = label_frames.load_labels(scope) if labels is None else labels
    adjudicated = label_frames.load_adjudicated(scope)
    return by_output(
        derive_gold(
            labels[labels["criterion"] == criterion.pk],
            adjudicated[adjudicated["criterion"] == criterion.pk],
            {criterion.pk: criterion.gold_policy},
        ),
        criterion.pk,
        "gold",
    )


def by_output(frame: pd.DataFrame, criterion_id: int, column: str) -> dict[int, str]:
    rows = frame[frame["criterion"] == criterion_id]
    return dict(zip(rows["output"].astype("int64"), rows[column], strict=True))


def verdict_value(outcome: str | None) -> float:
    """A verdict: 1 for PASS, 0 for FAIL, NaN for anything else (ERROR, ABSTAIN, N/A: no usable verdict)."""
    return 1.0 if outcome == PASS else 0.0 if outcome == FAIL else np.nan


def gold_value(outcome: str | None) -> float:
    """Gold: 1 PASS, 0 FAIL, audit_stats.NOT_APPLICABLE for N/A (outside the pass rate, as in the gate), NaN
    while it is pending or Can't tell (a pass rate needs PASS or FAIL; a reviewer may settle it)."""
    if outcome == NOT_APPLICABLE:
        return audit_stats.NOT_APPLICABLE
    return verdict_value(outcome)


def vote_shares(verdicts: pd.DataFrame, criterion_id: int, ids: list[int]) -> list[float | None]:
    """One judge config's signal for the jury predictor (calibration/stats/audit_predictor.py), per output of
    `ids`: the share of PASS among its current samples of the criterion (each sample from the most recent run
    that has it, as frame_reading.current_verdicts reads them; ERROR, ABSTAIN and N/A are not votes), None
    where it has no usable sample. `verdicts`: frames.load_verdicts of that config, so a config's signal comes
    only from its own runs."""
    rows = verdicts[verdicts["criterion"] == criterion_id]
    current = rows.sort_values("run_rank", kind="stable").drop_duplicates(["output", "sample"], keep="first")
    outcomes = current.groupby("output")["outcome"].agg(list).to_dict()
    return [audit_predictor.vote_share(outcomes.get(output_id, [])) for output_id in ids]


def jury_signals(plan: AuditPlan, configs: list[JudgeConfig], ids: list[int]) -> dict[str, list[float | None]]:
    """The jury's signals of a plan's outputs `ids` (in order position), one per judge config, by config name:
    what `audit_predictor.predictor` takes. One query per config."""
    scope = label_frames.Scope(plan.eval_set, plan.criterion.rubric_version, plan.agent_version or None)
    return {config.name: vote_shares(frames.load_verdicts(scope, config), plan.criterion.pk, ids) for config in configs}
