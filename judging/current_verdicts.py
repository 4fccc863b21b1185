"""Which verdicts count, read at query time.

For an (eval set, rubric version, judge config), the verdict of an (output, criterion,
sample) is the one from the most recent run that has it: a later run (or import)
supersedes an earlier one item by item, and a cancelled run's verdicts still count
for the items it reached. With several samples an item's outcome is the majority,
ties read as ABSTAIN, reported with the share of samples that agree (judging/sample_majority.py:
the one rule, which calibration/data/frame_reading.py applies to its frames too). Verdicts of a probe
run (probe != "") graded changed transcripts and never count.
"""

from __future__ import annotations

from django.db.models import Exists, OuterRef, QuerySet

from evals.models import EvalSet, RubricVersion

from .models import JudgeConfig, Verdict


def current_verdicts(
    *, eval_set: EvalSet, rubric_version: RubricVersion, judge_config: JudgeConfig, agent_version: str = ""
) -> QuerySet[Verdict]:
    scoped = Verdict.objects.counted().filter(
        output__case__eval_set=eval_set, rubric_version=rubric_version, judge_config=judge_config
    )
    if agent_version:
        scoped = scoped.filter(output__agent_version=agent_version)
    # Runs are numbered in creation order, so "a later run has it" is "a larger run id has it".
    newer = Verdict.objects.counted().filter(
        output=OuterRef("output"),
        criterion=OuterRef("criterion"),
        sample=OuterRef("sample"),
        rubric_version=rubric_version,
        judge_config=judge_config,
        run_id__gt=OuterRef("run_id"),
    )
    return scoped.filter(~Exists(newer))
