"""The calibration overview's numbers and the comparison's defaults, both read from what the judge has run.

An instrument is a (judge config, rubric version) pair; each eval set a judge ran on gets a grid of its
criteria (rows) x its instruments (columns), every cell the report's kappa, interval and tier. The grid
shows the MAX_GRID_COLUMNS most recently run instruments per eval set: each column is one full report
(seven queries, ten with a probe run), so the page's cost grows with the columns shown, never with the data; on a
large eval set the report's rows are a worker's (report/stored_report.py) and the column says how fresh they are.

A judge version measured on the held-out split (its examples came from this eval set) gets no figures here:
every look at them is counted (docs/calibration.md, "Why looks are counted"), and a page a lead opens many
times a day must not spend looks nor show them uncounted. Its cells say so, and its report is one click away.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass

from django.db.models import Max
from django.urls import reverse

from calibration.data.holdout import held_out_split
from calibration.models import GatingMark
from calibration.report.rows import CriterionReport
from calibration.report.stored_report import shown_report
from evals.models import EvalSet, RubricVersion, Workspace
from evals.workspaces import in_workspace
from judging.models import GoldSplit, JudgeConfig, JudgeRun

# A cell of a column measured on the held-out split: no figures (see the module's docstring).
HELD_OUT = GoldSplit.HELD_OUT
# A cell of a large eval set's column before a worker first computed its report.
COMPUTING = "computing"

# A lead compares a handful of judges or rubric edits at a time; beyond six columns the table no longer fits
# a laptop screen and each column costs a report. Older instruments stay one click away (the list below it).
MAX_GRID_COLUMNS = 6


@dataclass(frozen=True)
class Instrument:
    eval_set_id: int
    rubric_version_id: int
    judge_config_id: int


def run_instruments(workspace: Workspace) -> list[Instrument]:
    """Every (eval set, rubric version, judge config) of `workspace` a run exists for, the most recently run first
    (one query)."""
    rows = (
        in_workspace(JudgeRun, workspace)
        .filter(probe_run__isnull=True)  # a probe run's verdicts never count for calibration
        .values("eval_set_id", "rubric_version_id", "judge_config_id")
        .annotate(last=Max("created_at"), last_id=Max("id"))
        .order_by("-last", "-last_id")
    )
    return [Instrument(r["eval_set_id"], r["rubric_version_id"], r["judge_config_id"]) for r in rows]


@dataclass(frozen=True)
class Column:
    rubric_version: RubricVersion
    judge_config: JudgeConfig
    url: str
    gating: int  # active gating marks of this instrument
    fresh: str = ""  # a large eval set's stored figures: how fresh they are (report/stored_report.py)


@dataclass(frozen=True)
class Grid:
    eval_set: EvalSet
    columns: list[Column]
    # Criterion key, its row per column (None: not in that rubric version; HELD_OUT: figures on the report only;
    # COMPUTING: a large eval set's first figures are on their way from a worker).
    rows: list[tuple[str, list[CriterionReport | str | None]]]
    more: int  # instruments run on this eval set that the grid leaves out


def overview_grids(instruments: list[Instrument], max_columns: int = MAX_GRID_COLUMNS) -> list[Grid]:
    """The grids of these instruments (run_instruments' of one workspace: every id below comes from them)."""
    eval_sets = EvalSet.objects.in_bulk({i.eval_set_id for i in instruments})
    versions = RubricVersion.objects.select_related("rubric").in_bulk({i.rubric_version_id for i in instruments})
    judges = JudgeConfig.objects.in_bulk({i.judge_config_id for i in instruments})
    # The shown versions' marks only: what is read stays the workspace's, whatever the number of workspaces.
    marks = GatingMark.objects.active().filter(rubric_version_id__in=list(versions))
    gating = Counter(marks.values_list("rubric_version_id", "judge_config_id"))
    by_set: dict[int, list[Instrument]] = {}
    for i in instruments:
        by_set.setdefault(i.eval_set_id, []).append(i)
    grids = []
    for es in sorted(eval_sets.values(), key=lambda e: e.name):
        shown = by_set[es.pk][:max_columns]
        columns: list[Column] = []
        reports: list[dict[str, CriterionReport | str]] = []
        # Oldest first, left to right, so the newest instrument is the rightmost column.
        for i in reversed(shown):
            rv, jc = versions[i.rubric_version_id], judges[i.judge_config_id]
            fresh = ""
            if held_out_split(eval_set=es, rubric_version=rv, judge_config=jc) is not None:
                criteria = rv.criteria.order_by("order", "id").values_list("key", flat=True)
                reports.append(dict.fromkeys(criteria, HELD_OUT))
            else:
                read = shown_report(eval_set=es, rubric_version=rv, judge_config=jc)
                fresh = read.fresh.words() if read.fresh else ""
                if read.report is None:
                    criteria = rv.criteria.order_by("order", "id").values_list("key", flat=True)
                    reports.append(dict.fromkeys(criteria, COMPUTING))
                else:
                    reports.append({r.criterion: r for r in read.report.rows})
            url = reverse("calibration:report", args=[es.pk, rv.pk, jc.pk])
            columns.append(Column(rv, jc, url, gating[(rv.pk, jc.pk)], fresh))
        keys = list(dict.fromkeys(key for report in reports for key in report))
        rows = [(key, [report.get(key) for report in reports]) for key in keys]
        grids.append(Grid(es, columns, rows, len(by_set[es.pk]) - len(shown)))
    return grids


def _int(value) -> int | None:
    try:
        return int(value)
    except (TypeError, ValueError):
        return None


SIDES = (("left_rubric", "left_judge"), ("right_rubric", "right_judge"))


def default_pair(instruments: list[Instrument], eval_set_id: int | None, left: tuple | None) -> dict | None:
    """The comparison to open with: on one eval set, two instruments that differ in one thing only (two judge
    configs on the same rubric version, or two rubric versions with the same judge), the most recently run.

    `left` (rubric version id, judge id) fixes side A when the caller has one (the report's Compare link);
    side B is then the most recent instrument sharing its rubric version or its judge. Without it, B is the
    most recently run instrument and A the most recent one comparable with it. Without `eval_set_id`, the most
    recently run eval set that has such a pair. None: nothing to compare."""
    if eval_set_id is None:
        # The most recently run eval set with a comparable pair: the last run may be the only one on its set
        # (a release candidate judged once) while an earlier set holds two instruments.
        pairs = (
            default_pair(instruments, set_id, left) for set_id in dict.fromkeys(i.eval_set_id for i in instruments)
        )
        return next((pair for pair in pairs if pair), None)
    on_set = [(i.rubric_version_id, i.judge_config_id) for i in instruments if i.eval_set_id == eval_set_id]
    anchor = left if left in on_set else (on_set[0] if on_set else None)
    if anchor is None:
        return None
    other = next((p for p in on_set if p != anchor and (p[0] == anchor[0] or p[1] == anchor[1])), None)
    if other is None:
        return None
    a, b = (anchor, other) if left in on_set else (other, anchor)
    return {
        "eval_set": eval_set_id,
        "left_rubric": a[0],
        "left_judge": a[1],
        "right_rubric": b[0],
        "right_judge": b[1],
    }


def comparison_params(query, workspace: Workspace, instruments: list[Instrument] | None = None) -> dict | None:
    """What the compare form is bound to: the query where it names both sides, its gaps filled with
    default_pair (a side is taken whole, never half from the query and half from the defaults). None when
    the query names nothing and there is nothing to compare."""
    given = {key: query.get(key) for key in ("eval_set", *SIDES[0], *SIDES[1]) if query.get(key)}
    if all(given.get(k) for side in SIDES for k in side) and given.get("eval_set"):
        return given
    instruments = run_instruments(workspace) if instruments is None else instruments
    left = tuple(_int(given.get(k)) for k in SIDES[0])
    defaults = default_pair(instruments, _int(given.get("eval_set")), left if None not in left else None)
    if defaults is None:
        return None
    filled = dict(defaults)
    for side in SIDES:
        if all(given.get(k) for k in side):
            filled.update({k: given[k] for k in side})
    if given.get("eval_set"):
        filled["eval_set"] = given["eval_set"]
    return filled
