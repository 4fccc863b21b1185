"""Where the verdicts the gate decided on came from (`provenance`): each run whose verdicts are current, with how
many, and for imported ones how they came in (manage.py import_verdicts, the Import page, or a push and its token).
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from pathlib import PurePath

from judging.models import JudgeRun

JUDGE_RUN, IMPORT, PUSH, PAGE = "judge_run", "import", "push", "page"


@dataclass(frozen=True)
class VerdictSource:
    """One run whose verdicts the gate decided on. `origin`: judge_run (the config's own run), import
    (manage.py import_verdicts, or an import made before provenance was recorded: then `file` is empty), page (a
    lead's file on the Import page) or push (POST /api/verdicts, with its token)."""

    run: int
    origin: str
    verdicts: int  # current verdict samples of the gating criteria from this run
    mode: str
    label: str
    file: str
    finished_at: str | None
    token: dict | None  # {"id", "project"} of the token that pushed it

    def as_dict(self) -> dict:
        return dataclasses.asdict(self)

    def describe(self) -> str:
        label = f' "{self.label}"' if self.label else ""
        if self.origin == JUDGE_RUN:
            how = f"judge run, {dict(JudgeRun.Mode.choices).get(self.mode, self.mode).lower()}"
        elif self.origin == PUSH:
            token = self.token or {}
            how = f"pushed with token {token.get('project', '?')!r} (id {token.get('id', '?')}), {self.file}"
        elif self.origin == PAGE:
            how = f"imported on the Import page, {self.file}"
        else:
            how = f"imported with manage.py import_verdicts, {self.file}" if self.file else "imported, how not recorded"
        return f"run {self.run}{label} ({how}): {self.verdicts:,}"


def verdict_sources(run_counts: dict[int, int]) -> tuple[VerdictSource, ...]:
    """The runs of `run_counts` (run id -> current verdicts) with their provenance, oldest first; one query."""
    runs = JudgeRun.objects.filter(pk__in=list(run_counts)).select_related("push__token").order_by("pk")
    return tuple(_source(run, run_counts[run.pk]) for run in runs)


def _source(run: JudgeRun, verdicts: int) -> VerdictSource:
    push = getattr(run, "push", None)
    if run.mode != JudgeRun.Mode.IMPORT:
        origin = JUDGE_RUN
    elif push is not None or run.imported_via == JudgeRun.ImportedVia.PUSH:
        origin = PUSH
    elif run.imported_via == JudgeRun.ImportedVia.PAGE:
        origin = PAGE
    else:
        origin = IMPORT
    return VerdictSource(
        run=run.pk,
        origin=origin,
        verdicts=verdicts,
        mode=run.mode,
        label=run.label,
        file=PurePath(run.source_name).name,  # the file's name: a server path tells a CI log nothing it should know
        finished_at=run.finished_at.isoformat() if run.finished_at else None,
        token={"id": push.token_id, "project": push.token.project} if push is not None else None,
    )
