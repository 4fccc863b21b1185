"""A calibration report's rows computed in a Celery worker and stored (issue 37 item 5): asking for them, computing
them once per report at a time with the latest change winning, and reading them with how fresh they are.

On a large eval set (outputs x criteria at least ICEWATER_REPORT_STORED_FROM_ITEMS) loading the labels, gold and
verdicts alone takes seconds, so the report's pages (the report, Compare, the calibration overview's grid, Home's
check of the gating marks' tiers, the drilldown behind a cell: cell_items.py, the annotators' agreement:
annotator_figures.py) never compute it there: they show the rows a worker stored (ReportFigures) with
how fresh they are ("as of change 12 to the labels and verdicts, 4 s ago; updating…") and poll while a worker
computes newer ones. On a smaller eval set the page computes the report as before: it takes less than the page's
250 ms budget cold (docs/calibration.md, "Performance"), and the figures are then always of the data as it is now.

What makes stored rows stale: a label, an annotation's submission, a gold label or a dispute on an output of the
eval set (audits/figures_triggers.py sends them here too), a save of a judge run on the instrument, a gating mark on
its rubric version and judge (report_triggers.py). Writes that send no signal (bulk imports) are caught by the
re-check: a reader of rows older than RECHECK_AFTER asks again; a computation from unchanged data costs only the
loading (the rows come from the content cache). Decisions (approvals, the gate) never read these rows: they compute.
"""

from __future__ import annotations

import pickle
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from functools import partial

from django.conf import settings
from django.db import IntegrityError, transaction
from django.db.models import BooleanField, Case, Count, ExpressionWrapper, F, IntegerField, Q, Subquery, When
from django.db.models.functions import Coalesce, Greatest
from django.utils import timezone

from calibration.data import content_cache, worker_figures
from calibration.models import ReportFigures
from calibration.report import drilldown
from calibration.report.annotator_agreement import AnnotatorAgreement
from calibration.report.annotator_loading import annotator_rows
from calibration.report.compose import CalibrationReport, ReportCore, assemble, calibration_report, report_core
from calibration.report.waiting import Waiting, waiting_work
from evals.models import Criterion, EvalSet, Output, RubricVersion
from judging.models import JudgeConfig

# The Celery task's name (calibration/tasks.py registers it; this module sends it by name and never imports it).
TASK = "recompute-report-figures"
# The first key of the advisory lock: its own space, apart from the audit plans' (37_001).
LOCK_SPACE = 37_005
# A row behind for longer than this since it was asked for is asked for again by the next reader (a lost task).
KICK_AFTER = timedelta(seconds=60)
# Rows older than this are asked for again by the next reader: writes that send no signal (imports) are seen.
RECHECK_AFTER = timedelta(minutes=10)


def after_commit(fn: Callable[[], None]) -> None:
    transaction.on_commit(fn)


def send(row_id: int) -> None:
    from celery import current_app

    current_app.send_task(TASK, args=[row_id])


def agent_versions(eval_set: EvalSet) -> list[str]:
    """The agent versions of the eval set's outputs (one query; the report page's filter)."""
    outputs = Output.objects.filter(case__eval_set=eval_set).order_by()
    return list(outputs.values_list("agent_version", flat=True).distinct())


def items_of(eval_set: EvalSet, rubric_version: RubricVersion) -> ExpressionWrapper:
    """outputs x criteria, as one expression of two scalar subqueries."""
    outputs = Output.objects.filter(case__eval_set=eval_set).order_by().values("case__eval_set")
    criteria = Criterion.objects.filter(rubric_version=rubric_version).order_by().values("rubric_version")
    n_outputs = Subquery(outputs.annotate(n=Count("pk")).values("n"))
    n_criteria = Subquery(criteria.annotate(n=Count("pk")).values("n"))
    return ExpressionWrapper(Coalesce(n_outputs, 0) * Coalesce(n_criteria, 0), output_field=IntegerField())


@dataclass(frozen=True)
class Freshness:
    current: bool
    as_of: int  # the change the rows are of
    seen: int  # the changes seen so far
    computed_at: datetime | None
    duration_s: float | None

    def words(self, now: datetime | None = None) -> str:
        """ "as of change 12 to the labels and verdicts, 4 s ago; updating…", as the audit plans say theirs (a
        bare "change 12" told a reader nothing of what changed)."""
        of = f"change {self.as_of} to the labels and verdicts"
        return worker_figures.fresh_words(self.computed_at, of, current=self.current, now=now)


@dataclass(frozen=True)
class Stored:
    """What a worker stores of a report (pickled in ReportFigures.core): the rows, and what waits per criterion
    (waiting.py; it loads the same labels and gold, so it costs a large eval set's page as much)."""

    core: ReportCore
    waiting: dict[str, Waiting]
    agent_versions: tuple[str, ...]  # of the eval set's outputs, for the page's filter (a DISTINCT over them all)
    # Each confusion cell's items (drilldown.all_cells), so the drilldown behind a cell loads no rows either.
    cells: Mapping[str, tuple[int, ...]] = field(default_factory=dict)
    # The annotators' agreement page's rows (annotator_figures.py), with the report over all agent versions only.
    annotators: tuple[AnnotatorAgreement, ...] | None = None


@dataclass(frozen=True)
class Shown:
    """What a page shows of one report: None before a worker first computed a large one; `fresh` None when the
    report was computed for this request (a small eval set: always current), and so is `waiting`."""

    report: CalibrationReport | None
    fresh: Freshness | None
    waiting: dict[str, Waiting] | None = None
    agent_versions: tuple[str, ...] | None = None


def shown_report(
    *,
    eval_set: EvalSet,
    rubric_version: RubricVersion,
    judge_config: JudgeConfig,
    agent_version: str | None = None,
    with_audit_plans: bool = False,
) -> Shown:
    """The report as a page shows it: computed now on a small eval set, else the stored rows (asking a worker for
    them when they are missing, behind and long asked for, or old)."""
    row = stored_row(eval_set, rubric_version, judge_config, agent_version)
    if row is None:
        report = calibration_report(
            eval_set=eval_set,
            rubric_version=rubric_version,
            judge_config=judge_config,
            agent_version=agent_version,
            with_audit_plans=with_audit_plans,
        )
        return Shown(report, None)
    now = timezone.now()
    stored, fresh = read_stored(row, now)
    if stored is None:
        return Shown(None, fresh)
    report = assemble(
        stored.core,
        eval_set=eval_set,
        rubric_version=rubric_version,
        judge_config=judge_config,
        agent_version=agent_version,
        with_audit_plans=with_audit_plans,
        computed_at=row.computed_at or now,
    )
    return Shown(report, fresh, stored.waiting, stored.agent_versions)


def read_stored(row: ReportFigures, now: datetime | None = None) -> tuple[Stored | None, Freshness]:
    """What a worker stored in `row` (None before its first computation) and how fresh it is, asking a worker for
    newer figures when they are missing, behind and long asked for, or old: every page that reads stored figures."""
    now = now or timezone.now()
    stored = _stored(row)
    behind = row.done < row.wanted
    lost = behind and row.requested_at < now - KICK_AFTER
    old = row.computed_at is not None and row.computed_at < now - RECHECK_AFTER
    if lost or (not behind and (stored is None or old)):
        _request(row)
        row.refresh_from_db(fields=["wanted", "done"])
    fresh = Freshness(
        stored is not None and row.done >= row.wanted, row.done, row.wanted, row.computed_at, row.duration_s
    )
    return stored, fresh


def stored_row(
    eval_set: EvalSet, rubric_version: RubricVersion, judge_config: JudgeConfig, agent_version: str | None = None
) -> ReportFigures | None:
    """The stored row of a large eval set's report (made on the first look), None for a small one: one query for a
    small eval set, two for a large one. An eval set that has a row stays large (sets grow), so a large set's page
    never counts its outputs again: PostgreSQL evaluates only the branch of the CASE it takes."""
    rows = ReportFigures.objects.filter(
        eval_set=eval_set, rubric_version=rubric_version, judge_config=judge_config, agent_version=agent_version or ""
    )
    found, items = Criterion.objects.filter(
        pk=Subquery(Criterion.objects.filter(rubric_version=rubric_version).values("pk")[:1])
    ).annotate(row=Subquery(rows.values("pk")[:1])).annotate(
        items=Case(When(row__isnull=True, then=items_of(eval_set, rubric_version)), default=None)
    ).values_list("row", "items").first() or (None, 0)
    if found is not None:
        return rows.get()
    if (items or 0) < settings.ICEWATER_REPORT_STORED_FROM_ITEMS:
        return None
    return _row(eval_set, rubric_version, judge_config, agent_version or "")


def _stored(row: ReportFigures) -> Stored | None:
    """The stored rows, or None before the first computation or when another version of the code computed them."""
    if row.core is None or row.code != content_cache.code_digest().hex():
        return None
    # Our own table, written only by the worker below: a pickle of our own dataclasses, never anyone's input.
    return pickle.loads(bytes(row.core))  # noqa: S301


def _row(eval_set: EvalSet, rubric_version: RubricVersion, judge_config: JudgeConfig, agent_version: str):
    def get_or_create() -> tuple[ReportFigures, bool]:
        return ReportFigures.objects.get_or_create(
            eval_set=eval_set, rubric_version=rubric_version, judge_config=judge_config, agent_version=agent_version
        )

    try:
        with transaction.atomic():
            row, created = get_or_create()
    except IntegrityError:  # another request created it between our look and our insert: now we find it
        row, created = get_or_create()
    if created:
        after_commit(partial(send, row.pk))
    return row


def _request(row: ReportFigures) -> None:
    ReportFigures.objects.filter(pk=row.pk).update(wanted=F("wanted") + 1, requested_at=timezone.now())
    after_commit(partial(send, row.pk))


def changed(where: Q) -> None:
    """The data of the stored reports `where` selects changed (committed): each is behind and asked for again."""
    # One UPDATE when no report of the data is stored (every small eval set): a label's save pays one query.
    if ReportFigures.objects.filter(where).update(wanted=F("wanted") + 1, requested_at=timezone.now()):
        for row_id in ReportFigures.objects.filter(where).values_list("pk", flat=True):
            send(row_id)


def labels_changed(where: dict) -> None:
    """A label, submission, gold label or dispute on the output `where` finds was committed (a listener of
    audits/figures_triggers.py: the same saves make an audit plan's figures stale)."""
    changed(Q(**where))


def recompute(row_id: int) -> int:
    """The worker's part (calibration/data/worker_figures.py): returns how many computations this call ran."""
    row = ReportFigures.objects.select_related("eval_set", "rubric_version__rubric", "judge_config").filter(pk=row_id)
    found = row.first()
    if found is None:
        return 0
    return worker_figures.coalesced(LOCK_SPACE, found.pk, partial(_is_current, found.pk), partial(_compute, found))


def _is_current(row_id: int) -> bool:
    empty = ExpressionWrapper(Q(core__isnull=True), output_field=BooleanField())
    rows = ReportFigures.objects.filter(pk=row_id).annotate(empty=empty)
    wanted, done, code, is_empty = rows.values_list("wanted", "done", "code", "empty").get()
    return done >= wanted and not is_empty and code == content_cache.code_digest().hex()


def _compute(row: ReportFigures) -> None:
    started, t0 = timezone.now(), time.monotonic()
    wanted = ReportFigures.objects.filter(pk=row.pk).values_list("wanted", flat=True).get()
    core = report_core(
        eval_set=row.eval_set,
        rubric_version=row.rubric_version,
        judge_config=row.judge_config,
        agent_version=row.agent_version or None,
    )
    waiting = waiting_work(row.eval_set, row.rubric_version).by_criterion
    cells = drilldown.all_cells(
        eval_set=row.eval_set,
        rubric_version=row.rubric_version,
        judge_config=row.judge_config,
        agent_version=row.agent_version or None,
    )
    annotators = None if row.agent_version else annotator_rows(row.eval_set, row.rubric_version)
    stored = Stored(core, waiting, tuple(sorted(agent_versions(row.eval_set))), cells, annotators)
    # One statement: the rows, the change they are of and their times together, or (killed before it) nothing.
    ReportFigures.objects.filter(pk=row.pk).update(
        core=pickle.dumps(stored, protocol=pickle.HIGHEST_PROTOCOL),
        code=content_cache.code_digest().hex(),
        done=Greatest(F("done"), wanted),
        computed_at=started,
        duration_s=time.monotonic() - t0,
        computations=F("computations") + 1,
    )
