"""Which verdicts count, read at query time.

For an (eval set, rubric version, judge config), the verdict of an (output, criterion,
sample) is the one from the most recent run that has it: a later run (or import)
supersedes an earlier one item by item, and a cancelled run's verdicts still count
for the items it reached. With several samples an item's outcome is the majority,
ties read as ABSTAIN, reported with the share of samples that agree (`majority`: the
one rule, which calibration/frame_reading.py applies to its frames too). Verdicts of a probe
run (probe != "") graded changed transcripts and never count.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable
from typing import NamedTuple

from django.db.models import Exists, OuterRef, QuerySet

from evals.models import EvalSet, RubricVersion

from .models import JudgeConfig, Verdict, VerdictOutcome


def current_verdicts(
    *, eval_set: EvalSet, rubric_version: RubricVersion, judge_config: JudgeConfig, agent_version: str = ""
) -> QuerySet[Verdict]:
    scoped = Verdict.objects.filter(
        output__case__eval_set=eval_set, rubric_version=rubric_version, judge_config=judge_config, probe=""
    )
    if agent_version:
        scoped = scoped.filter(output__agent_version=agent_version)
    # Runs are numbered in creation order, so "a later run has it" is "a larger run id has it".
    newer = Verdict.objects.filter(
        output=OuterRef("output"),
        criterion=OuterRef("criterion"),
        sample=OuterRef("sample"),
        rubric_version=rubric_version,
        judge_config=judge_config,
        run_id__gt=OuterRef("run_id"),
        probe="",
    )
    return scoped.filter(~Exists(newer))


class Majority(NamedTuple):
    outcome: str  # the most frequent outcome of the samples; ABSTAIN when two or more tie for it
    share: float  # the share of the samples that gave the most frequent outcome (each of the tied ones)
    tie: bool


def majority(outcomes: Iterable[str]) -> Majority:
    """The verdict of several samples: the most frequent outcome; a tie at the top is ABSTAIN (the samples
    could not settle it). ERROR counts like any outcome: mostly ERROR is an ERROR."""
    counts = Counter(outcomes)
    if not counts:
        raise ValueError("majority of no samples")
    total = sum(counts.values())
    ranked = counts.most_common()
    top, n = ranked[0]
    if len(ranked) > 1 and ranked[1][1] == n:
        return Majority(VerdictOutcome.ABSTAIN.value, n / total, tie=True)
    return Majority(top, n / total, tie=False)
