from __future__ import annotations

from django.core.management.base import BaseCommand

from evals.workspace_option import add_workspace_argument, chosen_workspace
from formats.case_import import import_cases

from ._io import run_import


class Command(BaseCommand):
    help = (
        "Import cases and outputs into an eval set of the workspace (created there if missing): JSONL or CSV with "
        "one output a line, a Google ADK .evalset.json / .evalset_result.json, or an Inspect AI log (.eval, or "
        ".json as Inspect writes it). All or nothing; importing the same file again changes nothing. Formats: "
        "docs/formats.md."
    )

    def add_arguments(self, parser):
        parser.add_argument("file")
        add_workspace_argument(parser)
        parser.add_argument("--eval-set", required=True, help="name of the eval set")
        parser.add_argument(
            "--agent-version",
            default=None,
            help="agent_version of records that do not name one, and of ADK result files (default: 'default'); "
            "of every output of an Inspect AI log (default: the log's model name)",
        )
        parser.add_argument(
            "--no-fast-path",
            action="store_true",
            help="use the portable bulk-insert path even on PostgreSQL (for comparison and debugging)",
        )

    def handle(self, *args, file: str, eval_set: str, agent_version: str, no_fast_path: bool, **options):
        report = run_import(
            file,
            import_cases,
            workspace=chosen_workspace(options["workspace"]),
            eval_set_name=eval_set,
            default_agent_version=agent_version,
            fast_path=False if no_fast_path else None,
        )
        self.stdout.write(report)
