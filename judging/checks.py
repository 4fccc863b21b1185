"""A database check for the provenance rule: verdicts of a model or instrument judge config come only from its
own judge runs. Before the rule, an import or a push could write into any config; this lists every config that
holds verdicts of such an import, so a database from before it is reviewed once.

Tagged `database`, so it runs with `manage.py migrate` (on the database being migrated) and with
`manage.py check --database default`, never on plain start-up checks that must not need a database.
"""

from __future__ import annotations

from django.core import checks
from django.db import DatabaseError
from django.db.models import Count

from .models import JudgeConfig, JudgeRun

HINT = (
    "These verdicts did not come from the config's own judge runs: an import or a push made them before imports "
    "were limited to imported configs. Read the runs (Judge > the run, or Admin > Judge runs); the gate refuses "
    "to decide while such verdicts count. Run the judge again on those eval sets (its verdicts supersede them). "
    "docs/security.md, 'Verdict provenance'."
)


@checks.register(checks.Tags.database)
def imported_verdicts_of_run_configs(app_configs=None, databases=None, **kwargs) -> list[checks.CheckMessage]:
    if not databases:
        return []
    found = []
    for alias in databases:
        runs = (
            JudgeRun.objects.using(alias)
            .filter(mode=JudgeRun.Mode.IMPORT)
            .exclude(judge_config__backend=JudgeConfig.Backend.IMPORTED)
            .annotate(n=Count("verdicts"))
            .order_by("judge_config__name", "pk")
            .values_list("judge_config__name", "judge_config__backend", "pk", "n")
        )
        try:
            found += list(runs)
        except DatabaseError:
            return []  # the tables are not there yet (before the first migrate): nothing to check
    by_config: dict[tuple[str, str], list[tuple[int, int]]] = {}
    for name, backend, run, n in found:
        by_config.setdefault((name, backend), []).append((run, n))
    return [
        checks.Warning(
            f"judge config {name!r} ({backend}) holds {_plural(sum(n for _, n in runs), 'imported verdict')} in "
            f"{_plural(len(runs), 'run')}: " + ", ".join(f"run {run} ({n:,})" for run, n in runs),
            hint=HINT,
            obj=name,
            id="judging.W001",
        )
        for (name, backend), runs in by_config.items()
    ]


def _plural(n: int, word: str) -> str:
    return f"{n:,} {word}{'' if n == 1 else 's'}"
