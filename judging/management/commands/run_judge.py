"""python manage.py run_judge: judge an eval set with a judge config, on Celery or in this process."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

from django.core.management.base import BaseCommand, CommandError

from evals.workspace_option import add_workspace_argument, chosen_workspace
from judging import runner
from judging.backends import Misconfigured
from judging.models import GoldSplit, JudgeRun
from judging.run_progress import progress_of
from judging.warmup import warm_up

# Exit codes: 1 the run ended without every verdict (cancelled, failed, timed out); 2 it could not start.
EXIT_INCOMPLETE = 1
EXIT_MISCONFIGURED = 2


def add_run_arguments(parser, *, what: str = "run") -> None:
    """The scope of a run and how to run it (probe_judge takes the same)."""
    parser.add_argument("--eval-set", required=True, metavar="NAME")
    parser.add_argument("--rubric", required=True, metavar="NAME@VERSION")
    parser.add_argument("--judge", required=True, metavar="NAME", help="a judge config (see add_judge)")
    parser.add_argument("--agent-version", default="", metavar="V", help="judge only this agent version's outputs")
    how = parser.add_mutually_exclusive_group()
    how.add_argument("--wait", action="store_true", help=f"queue on Celery and follow the {what} to its end")
    how.add_argument(
        "--in-process",
        action="store_true",
        help="run here with the same concurrency and retry rules, without a broker (CI on one machine)",
    )
    parser.add_argument("--timeout", type=float, default=None, metavar="SECONDS", help="with --wait: give up after")
    parser.add_argument("--poll", type=float, default=2.0, metavar="SECONDS", help="with --wait: progress interval")
    add_workspace_argument(parser)


def follow(read_progress: Callable[[], Any], what: str, options, say) -> None:
    """Print the progress line whenever it changes until the run ends; exit 1 (it goes on) after --timeout."""
    started, last = time.monotonic(), ""
    while True:
        progress = read_progress()
        if progress.finished:
            return
        if progress.line() != last:
            last = progress.line()
            say(options, last)
        if options["timeout"] is not None and time.monotonic() - started > options["timeout"]:
            hint = " (is a Celery worker running on this queue?)" if progress.status == "queued" else ""
            raise CommandError(
                f"{what} still {progress.status} after {options['timeout']:g} s{hint}; it goes on",
                returncode=EXIT_INCOMPLETE,
            )
        time.sleep(options["poll"])


class Command(BaseCommand):
    help = (
        "Run a judge over an eval set (optionally one agent version) with a rubric version. Without --wait or "
        "--in-process the run is queued on Celery and the command returns. Exit 0 when every item has a verdict "
        "(ERROR counts), 1 when the run ended otherwise, 2 on a misconfiguration (unknown names, a missing "
        "API key variable, nothing to judge)."
    )

    def add_arguments(self, parser):
        add_run_arguments(parser)
        parser.add_argument(
            "--split",
            choices=list(GoldSplit.PARTS),
            help="only the gold items of this part of the eval set's split (docs/judging.md, 'Improving a judge')",
        )

    def handle(self, *args, **options):
        workspace = chosen_workspace(options["workspace"])
        try:
            scope = runner.resolve(
                workspace=workspace,
                eval_set=options["eval_set"],
                rubric=options["rubric"],
                judge=options["judge"],
                agent_version=options["agent_version"],
            )
            part = options.get("split")
            if part and options["in_process"]:
                run = runner.create_split_run(scope, part=part, mode=JudgeRun.Mode.IN_PROCESS)
            elif part:
                run = runner.start_split_run(scope, part=part)
            elif options["in_process"]:
                run = runner.create_run(scope, mode=JudgeRun.Mode.IN_PROCESS)
            else:
                run = runner.start_run(scope)
        except Misconfigured as exc:
            raise CommandError(str(exc), returncode=EXIT_MISCONFIGURED) from None
        run.refresh_from_db(fields=["status", "error"])
        if run.status == JudgeRun.Status.FAILED:  # the broker was unreachable
            raise CommandError(f"judge run {run.pk} failed to start: {run.error}", returncode=EXIT_MISCONFIGURED)
        self.say(options, f"judge run {run.pk}: {run.total_items} items, {run.expected_verdicts} verdicts to write")
        if options["in_process"]:
            warm_up()  # what a Celery worker does when it starts
            runner.run_in_process(run)
        elif options["wait"]:
            follow(lambda: progress_of(run), f"judge run {run.pk}", options, self.say)
        else:
            self.say(options, "queued on Celery; follow it with the run page or `run_judge ... --wait`")
            return
        progress = progress_of(run)
        self.say(options, progress.line())
        for error in progress.errors:
            self.say(options, f"  ERROR x{error.count} ({error.kind}): {error.reason}")
        if not progress.complete:
            detail = f": {progress.error}" if progress.error else ""
            raise CommandError(
                f"judge run {run.pk} ended {progress.status} with {progress.verdicts} of "
                f"{progress.expected_verdicts} verdicts{detail}",
                returncode=EXIT_INCOMPLETE,
            )

    def say(self, options, text: str) -> None:
        if options["verbosity"] > 0:
            self.stdout.write(text)
