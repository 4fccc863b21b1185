"""Held-out figures on request: each request is one counted look (judging.models.HoldoutLook).

While a judge is improved, every comparison shows the development split; the held-out split's figures appear
only when someone asks, and each time they do it is recorded (who, when, which versions) and counted, because
each look spends some of the held-out split's honesty (docs/calibration.md, "Why looks are counted").
"""

from __future__ import annotations

from collections.abc import Sequence

from evals.models import EvalSet, RubricVersion, User
from judging.gold_splits import look_count, part_outputs, record_look, split_for
from judging.models import GoldSplit, JudgeConfig

from .report import CriterionReport, rows_on_outputs


def look_at_held_out(
    *, split: GoldSplit, configs: Sequence[JudgeConfig], by: User | None, via: str
) -> tuple[dict[str, list[CriterionReport]], int]:
    """The held-out report rows of these judge config versions (by config name), counted as one look; returns
    them and the number of looks so far, this one included."""
    ids = frozenset(part_outputs(split, GoldSplit.HELD_OUT))
    record_look(split=split, by=by, configs=configs, via=via)
    rows = {
        c.name: rows_on_outputs(
            eval_set=split.eval_set, rubric_version=split.rubric_version, judge_config=c, output_ids=ids
        )
        for c in configs
    }
    return rows, look_count(split)


def development_rows(*, split: GoldSplit, configs: Sequence[JudgeConfig]) -> dict[str, list[CriterionReport]]:
    """The development split's report rows of these versions (by config name): what every comparison in the
    loop shows. Not a look: the development split is there to be looked at."""
    ids = frozenset(part_outputs(split, GoldSplit.DEVELOPMENT))
    return {
        c.name: rows_on_outputs(
            eval_set=split.eval_set, rubric_version=split.rubric_version, judge_config=c, output_ids=ids
        )
        for c in configs
    }


def count_report_look(
    *, eval_set: EvalSet, rubric_version: RubricVersion, judge_config: JudgeConfig, by: User | None, via: str
) -> None:
    """A calibration report that showed a version's held-out figures (its `split` is set) to a person or a
    client is a look too: the report page, the report command and the report endpoint count it here."""
    split = split_for(eval_set, rubric_version)
    if split is not None:
        record_look(split=split, by=by, configs=[judge_config], via=via)
