"""Guarding the figures of a judge whose guidance has examples (issue 23): its report, decision words and gating
marks read the held-out split of its own calibration eval set, and a mark whose examples came from the items it
is measured on is refused. Held-out figures asked for while improving a judge are counted as looks.

Why (docs/calibration.md, "Development and held-out splits"): examples are chosen because the judge got
them wrong; measured on those very items, the new version looks better than it is.
"""

from __future__ import annotations

from dataclasses import dataclass

from evals.models import EvalSet, Output, RubricVersion
from judging.gold_splits import look_count, part_outputs, split_for
from judging.models import GoldSplit, JudgeConfig


@dataclass(frozen=True)
class Restriction:
    """The outputs a report of this judge on this eval set may measure, and how the report says so."""

    part: str  # GoldSplit.HELD_OUT
    output_ids: frozenset[int]
    looks: int  # looks at this split's held-out figures so far

    @property
    def note(self) -> str:
        return (
            f"held-out split only ({len(self.output_ids)} outputs): this judge's examples came from the development "
            f"split of this eval set, so those items do not measure it; held out: looked at {self.looks} "
            f"time{'' if self.looks == 1 else 's'}"
        )


def example_eval_sets(judge_config: JudgeConfig) -> set[str]:
    return {e.get("eval_set", "") for g in judge_config.guidance.values() for e in g.get("examples", [])}


def held_out_split(*, eval_set: EvalSet, rubric_version: RubricVersion, judge_config: JudgeConfig) -> GoldSplit | None:
    """The split whose held-out part measures this judge on this eval set: when its examples came from this eval
    set and it has a split under this rubric version; None when the whole eval set measures it (no examples, or
    examples from elsewhere). One query at most; the one rule for the report's restriction and for its looks."""
    if not judge_config.has_examples or eval_set.name not in example_eval_sets(judge_config):
        return None
    # None also for examples from this eval set without a split here: mark_gating refuses (measured_examples).
    return split_for(eval_set, rubric_version)


def report_restriction(
    *, eval_set: EvalSet, rubric_version: RubricVersion, judge_config: JudgeConfig
) -> Restriction | None:
    """The held-out outputs of held_out_split; None when the whole eval set measures this judge."""
    split = held_out_split(eval_set=eval_set, rubric_version=rubric_version, judge_config=judge_config)
    if split is None:
        return None
    return Restriction(GoldSplit.HELD_OUT, frozenset(part_outputs(split, GoldSplit.HELD_OUT)), look_count(split))


def measured_examples(
    *,
    eval_set: EvalSet,
    rubric_version: RubricVersion,
    judge_config: JudgeConfig,
    agent_version: str | None = None,
) -> list[int]:
    """The judge's example outputs that a report on this eval set would measure it on (should be none)."""
    examples = judge_config.example_output_ids()
    if not examples:
        return []
    restriction = report_restriction(eval_set=eval_set, rubric_version=rubric_version, judge_config=judge_config)
    if restriction is not None:
        return sorted(examples & restriction.output_ids)
    outputs = Output.objects.filter(case__eval_set=eval_set, pk__in=examples)
    if agent_version is not None:
        outputs = outputs.filter(agent_version=agent_version)
    return sorted(outputs.values_list("pk", flat=True))
