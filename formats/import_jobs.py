"""Imports from the Import page: small files while the page waits, larger ones on a Celery worker.

A file above settings.ICEWATER_UPLOAD_INLINE_BYTES (ICEWATER_UPLOAD_INLINE_MB, 1 MB) becomes an
ImportJob: the row keeps the file, formats.tasks.run_import_job loads it by id and calls the same
`import_file` the page calls for small files, so the result is the same, all or nothing, with the same
messages. While it runs, a thread reports how far the import has read the file to the "progress"
cache (the import's own transaction holds the database until it ends); the page polls it.
"""

from __future__ import annotations

import io
import logging
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from typing import BinaryIO

from django.core.cache import caches
from django.utils import timezone

from evals.models import EvalSet, RubricVersion, Workspace
from evals.problems import ImportFailed
from formats.case_import import import_cases
from formats.label_import import import_labels
from formats.readers import Source
from formats.rubric_import import import_rubric
from judging.models import JudgeRun

from .case_records import DEFAULT_AGENT_VERSION
from .import_summary import ImportReport
from .inspect_scores import ScoreMapping
from .models import ImportJob
from .verdicts import import_verdicts

log = logging.getLogger(__name__)
# How often the reporting thread looks at where the import is in the file (seconds).
REPORT_EVERY_S = 0.5
# A progress entry outlives any import; it is removed when the import ends.
PROGRESS_TIMEOUT_S = 24 * 3600


def _rubric(source: Source, workspace: Workspace, options: dict) -> ImportReport:
    return import_rubric(source=source, workspace=workspace)


def _cases(source: Source, workspace: Workspace, options: dict) -> ImportReport:
    agent_version = options.get("agent_version") or None
    return import_cases(
        source=source, workspace=workspace, eval_set_name=options["eval_set"], default_agent_version=agent_version
    )


def _labels(source: Source, workspace: Workspace, options: dict) -> ImportReport:
    return import_labels(
        source=source,
        workspace=workspace,
        eval_set_name=options["eval_set"],
        rubric_ref=options["rubric"],
        default_agent_version=options.get("agent_version") or DEFAULT_AGENT_VERSION,
    )


def _verdicts(source: Source, workspace: Workspace, options: dict) -> ImportReport:
    # The form checked the mapping already; a job's options were the form's, so this parse cannot fail.
    mapping = ScoreMapping.parse(options.get("scorers", []), options.get("scores", []), options.get("skip", []))
    return import_verdicts(
        source=source,
        workspace=workspace,
        eval_set_name=options["eval_set"],
        rubric_ref=options["rubric"],
        judge_name=options["judge"],
        default_agent_version=options.get("agent_version") or "",
        new_run=options.get("new_run") or "",
        score_mapping=mapping,
        via=JudgeRun.ImportedVia.PAGE,
    )


# The cards of the Import page (ImportJob.kind) and the import each runs.
IMPORTS = {"rubric": _rubric, "cases": _cases, "labels": _labels, "verdicts": _verdicts}


def import_file(*, kind: str, source: Source, workspace: Workspace, options: dict) -> dict:
    """Run one import of the page in `workspace` (the page's, or the job's): its names are looked up there and
    what it creates belongs there. Its result as the page shows it (JSON-ready, for a job's row as well).

    `options`: eval_set (a name), rubric (NAME@VERSION), agent_version (empty: the importer's default); for
    verdicts also judge, new_run and an Inspect AI log's scorers, scores and skip (ScoreMapping.parse's texts).
    """
    try:
        report = IMPORTS[kind](source, workspace, options)
    except ImportFailed as exc:
        return {"ok": False, "messages": str(exc).splitlines()}
    result = {"ok": True, "messages": str(report).splitlines(), "counts": report.counts}
    # What the next-step links need (upload.html): the eval set and rubric version the import was about.
    if kind in ("cases", "labels", "verdicts"):
        eval_set = EvalSet.objects.filter(workspace=workspace, name=options["eval_set"]).first()
        result["eval_set_id"], result["eval_set_name"] = (eval_set.pk, eval_set.name) if eval_set else (None, "")
    if kind in ("labels", "verdicts"):
        result["rubric_version_id"] = RubricVersion.objects.by_ref(options["rubric"], workspace).pk
    return result


def run(job_id: int) -> None:
    """Import a job's file (the Celery task). A redelivered job runs again: the import is atomic and idempotent."""
    claimed = ImportJob.objects.filter(pk=job_id, status__in=(ImportJob.Status.QUEUED, ImportJob.Status.RUNNING))
    if not claimed.update(status=ImportJob.Status.RUNNING, started_at=timezone.now()):
        return  # finished already
    job = ImportJob.objects.select_related("workspace").get(pk=job_id)
    stream = io.BytesIO(bytes(job.content))
    with reporting(job.pk, stream):
        try:
            result = import_file(
                kind=job.kind,
                source=Source(name=job.file_name, stream=stream),
                workspace=job.workspace,  # the workspace of the page that queued it, whoever's session is now
                options=job.options,
            )
        except Exception as exc:  # a bug or a lost database: the import rolled back; say so on the page
            log.exception("import job %s failed", job_id)
            result = {
                "ok": False,
                "messages": [
                    f"{job.file_name}: the import stopped on an unexpected error ({type(exc).__name__}); "
                    "try again, and tell whoever runs Icewater if it happens again",
                    "Nothing was imported.",
                ],
            }
    ImportJob.objects.filter(pk=job_id).update(
        status=ImportJob.Status.DONE if result["ok"] else ImportJob.Status.FAILED,
        result=result,
        content=b"",
        finished_at=timezone.now(),
    )
    caches["progress"].delete(_progress_key(job_id))


def _progress_key(job_id: int) -> str:
    return f"import-job-{job_id}"


@contextmanager
def reporting(job_id: int, stream: BinaryIO) -> Iterator[None]:
    """While the block runs, report the furthest point in `stream` the import has read, every REPORT_EVERY_S."""
    done = threading.Event()

    def report() -> None:
        furthest = 0
        while not done.wait(REPORT_EVERY_S):
            position = stream.tell()
            if position > furthest:
                furthest = position
                caches["progress"].set(_progress_key(job_id), furthest, PROGRESS_TIMEOUT_S)

    reporter = threading.Thread(target=report, name=f"import-job-{job_id}-progress", daemon=True)
    reporter.start()
    try:
        yield
    finally:
        done.set()
        reporter.join()


def bytes_read(job: ImportJob) -> int:
    """How far a running job has read its file (0 until its first report)."""
    if job.status != ImportJob.Status.RUNNING:
        return job.size if job.finished else 0
    return min(job.size, caches["progress"].get(_progress_key(job.pk), 0))
