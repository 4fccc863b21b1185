from __future__ import annotations

from django.core.management.base import BaseCommand

from evals.workspace_option import add_workspace_argument, chosen_workspace
from formats.label_import import import_labels

from ._io import run_import


class Command(BaseCommand):
    help = (
        "Import human labels and adjudicated gold labels for one rubric version: JSONL or CSV with one label a "
        "line, or a Label Studio JSON export. Unknown people become accounts that cannot log in until a lead "
        "activates them. All or nothing; importing the same file again changes nothing. Formats: docs/formats.md."
    )

    def add_arguments(self, parser):
        parser.add_argument("file")
        add_workspace_argument(parser)
        parser.add_argument("--eval-set", required=True, help="name of the eval set whose outputs are labeled")
        parser.add_argument("--rubric", required=True, help="the rubric version, as NAME@VERSION")
        parser.add_argument(
            "--agent-version",
            default="default",
            help="agent_version of lines that do not name one (default: %(default)s)",
        )

    def handle(self, *args, file: str, eval_set: str, rubric: str, agent_version: str, **options):
        report = run_import(
            file,
            import_labels,
            workspace=chosen_workspace(options["workspace"]),
            eval_set_name=eval_set,
            rubric_ref=rubric,
            default_agent_version=agent_version,
        )
        self.stdout.write(report)
