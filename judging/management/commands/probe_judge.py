"""python manage.py probe_judge: how easily a judge config is fooled, per criterion (docs/judging.md#probes)."""

from __future__ import annotations

import json

from django.core.management.base import BaseCommand, CommandError

from evals.workspace_option import chosen_workspace
from judging import runner
from judging.backends import Misconfigured
from judging.management.commands.run_judge import EXIT_INCOMPLETE, EXIT_MISCONFIGURED, add_run_arguments, follow
from judging.models import JudgeRun
from judging.probes import choose
from judging.probes import runs as probe_runs
from judging.probes.render import text_lines
from judging.probes.results import results_of
from judging.warmup import warm_up


class Command(BaseCommand):
    help = (
        "Judge an eval set's outputs as they are and through each probe (deterministic changes that should not, "
        "or for negative controls must, move a verdict) and report flip rates per criterion. Without --wait or "
        "--in-process the probe run is queued on Celery. Exit 0 when every arm has all its verdicts (ERROR "
        "counts), 1 when it ended otherwise, 2 when it could not start."
    )

    def add_arguments(self, parser):
        add_run_arguments(parser, what="probe run")
        parser.add_argument(
            "--probes", default=None, metavar="NAME,NAME", help="the probes to run, comma-separated (default: all)"
        )
        parser.add_argument(
            "--sample", type=int, default=None, metavar="N", help="probe N outputs, drawn with a fixed seed"
        )
        parser.add_argument("--format", choices=["text", "json"], default="text", help="how to print the results")

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
            names = options["probes"].split(",") if options["probes"] is not None else None
            probes = choose(names)
            kwargs = {"sample": options["sample"]}
            if options["in_process"]:
                probe_run = probe_runs.create_probe_run(scope, probes, mode=JudgeRun.Mode.IN_PROCESS, **kwargs)
            else:
                probe_run = probe_runs.start_probe_run(scope, probes, **kwargs)
        except Misconfigured as exc:
            raise CommandError(str(exc), returncode=EXIT_MISCONFIGURED) from None
        progress = probe_runs.progress_of(probe_run)
        if progress.status == JudgeRun.Status.FAILED:  # the broker was unreachable
            errors = "; ".join(progress.errors)
            raise CommandError(f"probe run {probe_run.pk} failed to start: {errors}", returncode=EXIT_MISCONFIGURED)
        planned = f"{probe_run.outputs} outputs, {len(progress.arms)} arms, {progress.total_items} items"
        self.say(options, f"probe run {probe_run.pk}: {planned}")
        if options["in_process"]:
            warm_up()
            probe_runs.run_in_process(probe_run)
        elif options["wait"]:
            follow(lambda: probe_runs.progress_of(probe_run), f"probe run {probe_run.pk}", options, self.say)
        else:
            self.say(options, "queued on Celery; follow it on the probe run page or with `probe_judge ... --wait`")
            return
        progress = probe_runs.progress_of(probe_run)
        self.say(options, progress.line())
        results = results_of(probe_run)
        if options["format"] == "json":
            self.stdout.write(json.dumps(results.as_dict(), indent=2, ensure_ascii=False))
        else:
            self.say(options, "\n".join(text_lines(results)))
        if progress.status != JudgeRun.Status.DONE:
            detail = f": {'; '.join(progress.errors)}" if progress.errors else ""
            raise CommandError(f"probe run {probe_run.pk} ended {progress.status}{detail}", returncode=EXIT_INCOMPLETE)

    def say(self, options, text: str) -> None:
        # With --format json, stdout holds the JSON alone; what a person follows goes to stderr.
        if options["verbosity"] > 0:
            (self.stderr if options["format"] == "json" else self.stdout).write(text)
