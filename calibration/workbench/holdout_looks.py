"""Held-out figures on request: each request is one counted look (judging.models.HoldoutLook).

While a judge is improved, every comparison shows the development split; the held-out split's figures appear
only when someone asks, and each time they do it is recorded (who, when, which versions) and counted, because
each look spends some of the held-out split's honesty (docs/calibration.md, "Why looks are counted").
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from calibration.data.holdout import held_out_split
from calibration.report.compose import rows_on_outputs
from calibration.report.rows import CriterionReport
from evals.models import EvalSet, RubricVersion, User
from judging.gold_splits import look_count, part_outputs, record_look
from judging.models import GoldSplit, JudgeConfig


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


def count_report_looks(
    *, eval_set: EvalSet, shown: Iterable[tuple[RubricVersion, JudgeConfig]], by: User | None, via: str
) -> int:
    """Calibration figures of these (rubric version, judge config) instruments on this eval set were just shown
    to a person or a client: one look at each split whose held-out part measured any of them (the versions it
    showed recorded with it), nothing for the others. Returns the number of looks counted.

    Every path that returns a report's figures calls this once per request (docs/calibration.md, "Why looks are
    counted"): the page and its exports, the API, the command, Compare, the drilldown. The rule that says which
    figures are held-out ones is holdout.held_out_split, the report's own."""
    by_split: dict[int, tuple[GoldSplit, dict[int, JudgeConfig]]] = {}
    for rubric_version, judge_config in shown:
        split = held_out_split(eval_set=eval_set, rubric_version=rubric_version, judge_config=judge_config)
        if split is not None:
            by_split.setdefault(split.pk, (split, {}))[1][judge_config.pk] = judge_config
    for split, configs in by_split.values():
        record_look(split=split, by=by, configs=configs.values(), via=via)
    return len(by_split)


def count_report_look(
    *, eval_set: EvalSet, rubric_version: RubricVersion, judge_config: JudgeConfig, by: User | None, via: str
) -> int:
    """count_report_looks for one instrument: 1 when its figures were held-out ones (a look counted), else 0."""
    return count_report_looks(eval_set=eval_set, shown=[(rubric_version, judge_config)], by=by, via=via)
