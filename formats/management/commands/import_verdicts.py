"""python manage.py import_verdicts: verdicts judged elsewhere (JSONL, ADK .evalset_result.json, Inspect AI log)."""

from __future__ import annotations

from django.core.management.base import BaseCommand, CommandError

from evals.problems import ImportFailed
from evals.workspace_option import add_workspace_argument, chosen_workspace
from formats.inspect_scores import ScoreMapping
from formats.readers import open_source
from formats.verdicts import import_verdicts


class Command(BaseCommand):
    help = (
        "Import verdicts produced elsewhere for an eval set, rubric version and judge config (created with "
        "backend 'imported' if missing). JSONL or CSV: {case_id, agent_version, criterion, outcome, evidence, "
        "raw}, plus the optional fields export_data writes; or a Google ADK .evalset_result.json, whose per-rubric "
        "scores (rubric_id = criterion key) become verdicts; or an Inspect AI log (.eval / .json), each scorer's "
        "scores giving a criterion's verdicts (C=PASS, I=FAIL, anything else ERROR). Atomic: a bad file writes "
        "nothing. A verdict already there with the same content is skipped, with different content an error "
        "(unless --new-run). docs/formats.md."
    )

    def add_arguments(self, parser):
        parser.add_argument("--eval-set", required=True, metavar="NAME")
        parser.add_argument("--rubric", required=True, metavar="NAME@VERSION")
        parser.add_argument("--judge", required=True, metavar="NAME")
        parser.add_argument(
            "--agent-version",
            default="",
            metavar="V",
            help="for records without agent_version (ADK results) when a case has outputs of several versions",
        )
        parser.add_argument(
            "--new-run",
            default="",
            metavar="LABEL",
            help="import the file as a new run with this name, superseding verdicts already there item by item "
            "(without it, a verdict already there with different content is an error)",
        )
        parser.add_argument(
            "--scorer",
            action="append",
            default=[],
            metavar="NAME=CRITERION",
            help="Inspect AI logs: the scorer NAME grades CRITERION (default: the criterion of the same key)",
        )
        parser.add_argument(
            "--skip-scorer", action="append", default=[], metavar="NAME", help="Inspect AI logs: leave this scorer out"
        )
        parser.add_argument(
            "--score",
            action="append",
            default=[],
            metavar="VALUE=OUTCOME",
            help="Inspect AI logs: the score VALUE means OUTCOME (defaults: C=PASS, I=FAIL, PASS, FAIL, true, false; "
            "any other value is an ERROR verdict)",
        )
        parser.add_argument("file")
        add_workspace_argument(parser)

    def handle(self, *args, **options):
        workspace = chosen_workspace(options["workspace"])
        try:
            mapping = ScoreMapping.parse(options["scorer"], options["score"], options["skip_scorer"])
        except ValueError as exc:
            raise CommandError(str(exc)) from None
        try:
            with open_source(options["file"]) as source:
                report = import_verdicts(
                    source=source,
                    workspace=workspace,
                    eval_set_name=options["eval_set"],
                    rubric_ref=options["rubric"],
                    judge_name=options["judge"],
                    default_agent_version=options["agent_version"],
                    score_mapping=mapping,
                    new_run=options["new_run"],
                )
        except FileNotFoundError:
            raise CommandError(f"{options['file']}: no such file") from None
        except ImportFailed as exc:
            raise CommandError(str(exc)) from None
        self.stdout.write(str(report))
