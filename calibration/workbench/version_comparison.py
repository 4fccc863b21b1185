"""Two judge config versions compared on one eval set's gold items, criterion by criterion.

Reads gold (the one rule, labeling/gold.py) and each version's current verdicts with the report's loaders
(frames.py), keeps the items asked for (a part of the gold split, or all of them), and hands each
criterion's items to the paired math (judge_compare.py). Five queries, whatever the number of items.
"""

from __future__ import annotations

from collections.abc import Collection
from dataclasses import dataclass

import pandas as pd

from calibration.data import frames
from calibration.data.frame_reading import current_verdicts
from calibration.stats.judge_compare import JudgeComparison, compare_judges
from evals.models import Criterion, EvalSet, RubricVersion
from judging.gold_splits import look_count, part_outputs, split_for
from judging.models import GoldSplit, HoldoutLook, JudgeConfig
from labeling import label_frames
from labeling.gold import KEY, derive_gold


@dataclass(frozen=True)
class CriterionComparison:
    criterion: Criterion
    comparison: JudgeComparison


def paired_items(
    labels: pd.DataFrame,
    adjudicated: pd.DataFrame,
    verdicts_a: pd.DataFrame,
    verdicts_b: pd.DataFrame,
    policies: dict[int, str],
    outputs: Collection[int] | None = None,
) -> pd.DataFrame:
    """Pure: criterion, output, gold, a, b for every item with gold (among `outputs` when given); a version
    without a verdict on an item has None there (judge_compare counts it as left out)."""
    gold = derive_gold(labels, adjudicated, policies)[KEY + ["gold"]]
    if outputs is not None:
        gold = gold[gold["output"].isin(list(outputs))]
    items = gold
    for column, verdicts in (("a", verdicts_a), ("b", verdicts_b)):
        current = current_verdicts(verdicts)[KEY + ["judge"]].rename(columns={"judge": column})
        items = items.merge(current, on=KEY, how="left")
    return items.astype({"a": object, "b": object}).where(items.notna(), None)


def compare_versions(
    *,
    eval_set: EvalSet,
    rubric_version: RubricVersion,
    judge_a: JudgeConfig,
    judge_b: JudgeConfig,
    outputs: Collection[int] | None = None,
) -> list[CriterionComparison]:
    """A against B per criterion of the rubric version, over the gold items of `outputs` (all when None)."""
    scope = label_frames.Scope(eval_set, rubric_version, None)
    criteria = frames.criteria_of(rubric_version)
    items = paired_items(
        label_frames.load_labels(scope),
        label_frames.load_adjudicated(scope),
        frames.load_verdicts(scope, judge_a),
        frames.load_verdicts(scope, judge_b),
        {c.pk: c.gold_policy for c in criteria},
        outputs,
    )
    by_criterion = dict(tuple(items.groupby("criterion", sort=False))) if len(items) else {}
    empty = items.iloc[0:0]
    return changed_first([CriterionComparison(c, compare_judges(by_criterion.get(c.pk, empty))) for c in criteria])


def changed_first(rows: list[CriterionComparison]) -> list[CriterionComparison]:
    """The criteria where B changed most items first (what the lead came to see, above the fold), then the
    rest in rubric order: a stable sort on the number of flipped items."""
    return sorted(rows, key=lambda row: -len(row.comparison.flips))


# What a comparison is over: a part of the gold split, or every gold item while no split is fixed yet.
ALL_GOLD = "all"
PART_TITLES = {
    GoldSplit.DEVELOPMENT: "development split",
    GoldSplit.HELD_OUT: "held-out split",
    ALL_GOLD: "all gold items (no split fixed yet)",
}
LOOKS_SHOWN = 5


@dataclass(frozen=True)
class Scope:
    """Which gold items a comparison reads, and what the held-out split has been through."""

    part: str
    split: GoldSplit | None
    outputs: list[int] | None
    looks: int
    recent_looks: list[HoldoutLook]

    @property
    def title(self) -> str:
        return PART_TITLES[self.part]


def comparison_scope(*, eval_set: EvalSet, rubric_version: RubricVersion, held_out: bool = False) -> Scope:
    """The development split by default; the held-out split only when asked (the caller records the look
    first). Before a split is fixed there is no held-out part and every gold item is compared."""
    split = split_for(eval_set, rubric_version)
    if split is None:
        return Scope(ALL_GOLD, None, None, 0, [])
    part = GoldSplit.HELD_OUT if held_out else GoldSplit.DEVELOPMENT
    looks = list(split.looks.select_related("looked_by")[:LOOKS_SHOWN])
    return Scope(part, split, part_outputs(split, part), look_count(split), looks)
