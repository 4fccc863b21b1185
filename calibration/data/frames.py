"""Where the ORM meets pandas for the judge: verdicts as tidy DataFrames (labels and gold are labeling/label_frames.py's).

Each loader runs one query, whatever the number of outputs or criteria, so pages and commands
built on them run a constant number of queries. Rows go from the database cursor straight into
a DataFrame (the querysets compile the SQL; Django's per-row model machinery is skipped), since
a calibration set can hold hundreds of thousands of labels.
"""

from __future__ import annotations

import pandas as pd

from evals.models import Criterion, Output, RubricVersion
from judging.models import JudgeConfig, Verdict
from labeling.gold import item_states
from labeling.label_frames import GOLD_COLUMNS, LABEL_COLUMNS, Scope, frame, load_adjudicated, load_labels

from calibration.data import content_cache

VERDICT_COLUMNS = ["output", "criterion", "run", "sample", "outcome", "evidence_found"]


def states_of(labels: pd.DataFrame, adjudicated: pd.DataFrame, policies: dict[int, str]) -> pd.DataFrame:
    """labeling.gold.item_states of these frames, computed once per content (content_cache.py)."""
    parts = (labels, adjudicated, sorted(policies.items()))
    return content_cache.computed("item-states", parts, lambda: item_states(labels, adjudicated, policies))


def criteria_of(rubric_version: RubricVersion) -> list[Criterion]:
    return list(Criterion.objects.filter(rubric_version=rubric_version).order_by("order", "id"))


def load_verdicts(scope: Scope, judge_config: JudgeConfig) -> pd.DataFrame:
    """Every stored verdict sample of this judge config: output, criterion, sample, outcome,
    evidence_found, run_rank. Runs are numbered in creation order, so the newest run has the lowest
    `run_rank` (its negated id); readers take each sample from the most recent run that has it, the
    same rule judging/current_verdicts.py applies.
    """
    # A probe run's verdicts (probe != "") judged changed transcripts: they never count here.
    qs = Verdict.objects.counted().filter(
        output__case__eval_set=scope.eval_set, rubric_version=scope.rubric_version, judge_config=judge_config
    )
    if scope.agent_version is not None:
        qs = qs.filter(output__agent_version=scope.agent_version)
    fields = ["output_id", "criterion_id", "run_id", "sample", "outcome", "evidence_found"]
    verdicts = frame(qs, fields, VERDICT_COLUMNS)
    return verdicts.assign(run_rank=-verdicts["run"].astype("int64")).drop(columns="run")


def load_other_verdicts(scope: Scope, judge_config: JudgeConfig) -> pd.DataFrame:
    """Every stored verdict sample of the OTHER judge configs of this eval set's workspace on this scope (one query,
    whatever their number): load_verdicts' columns and `config`, the config's name. What the price of gating reads for
    a jury (calibration/report/jury_pricing.py). Another workspace's configs never join, even with verdicts here."""
    qs = (
        Verdict.objects.counted()
        .filter(
            output__case__eval_set=scope.eval_set,
            rubric_version=scope.rubric_version,
            judge_config__workspace_id=scope.eval_set.workspace_id,
        )
        .exclude(judge_config=judge_config)
    )
    if scope.agent_version is not None:
        qs = qs.filter(output__agent_version=scope.agent_version)
    fields = ["output_id", "criterion_id", "run_id", "sample", "outcome", "evidence_found", "judge_config__name"]
    verdicts = frame(qs, fields, [*VERDICT_COLUMNS, "config"])
    return verdicts.assign(run_rank=-verdicts["run"].astype("int64")).drop(columns="run")


def load_agent_versions(scope: Scope) -> pd.DataFrame:
    """output, agent_version for every output of the eval set (to split a report by agent version)."""
    qs = Output.objects.filter(case__eval_set=scope.eval_set)
    if scope.agent_version is not None:
        qs = qs.filter(agent_version=scope.agent_version)
    return frame(qs.order_by(), ["id", "agent_version"], ["output", "agent_version"])
