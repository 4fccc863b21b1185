"""The items behind one confusion cell as the drilldown shows them: computed now from all the rows on a small eval
set, or on a large one read from what a worker stored with its report (stored_report.py; drilldown.all_cells), with
how fresh they are, so that the page loads only one page of items' details (issue 37 item 5: under 250 ms warm).
"""

from __future__ import annotations

from dataclasses import dataclass

from calibration.report import drilldown
from calibration.report.stored_report import Freshness, read_stored, stored_row
from evals.models import Criterion, EvalSet, RubricVersion
from judging.models import JudgeConfig


@dataclass(frozen=True)
class ShownCell:
    ids: list[int] | None  # in output order; None: a worker is computing a large eval set's first figures
    fresh: Freshness | None  # None: computed for this request (a small eval set: always current)


def shown_cell(
    instrument: tuple[EvalSet, RubricVersion, JudgeConfig], criterion: Criterion, cell: str, agent_version: str | None
) -> ShownCell:
    """The items of `cell` of `criterion` on the instrument (eval set, rubric version, judge config)."""
    es, rv, jc = instrument
    row = stored_row(es, rv, jc, agent_version)
    if row is None:
        ids = drilldown.cell_output_ids(
            eval_set=es, rubric_version=rv, judge_config=jc, criterion=criterion, cell=cell, agent_version=agent_version
        )
        return ShownCell(ids, None)
    stored, fresh = read_stored(row)
    if stored is None:
        return ShownCell(None, fresh)
    return ShownCell(list(stored.cells.get(drilldown.cell_key(criterion.pk, cell), ())), fresh)
