"""Held-out figures on request: each request is one counted look (judging.models.HoldoutLook).

While a judge is improved, every comparison shows the development split; the held-out split's figures appear
only when someone asks, and each time they do it is recorded (who, when, which versions) and counted, because
each look spends some of the held-out split's honesty (docs/calibration.md, "Why looks are counted").
"""

from __future__ import annotations

from collections.abc import Sequence

from evals.models import User
from judging.gold_splits import look_count, part_outputs, record_look
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
