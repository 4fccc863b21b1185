from __future__ import annotations

from django.core.management.base import BaseCommand

from evals.workspace_option import add_workspace_argument, chosen_workspace
from formats.rubric_import import import_rubric

from ._io import run_import


class Command(BaseCommand):
    help = (
        "Import a rubric version into the workspace from JSON or YAML: {name, version, instruction, criteria: "
        "[{key, definition, pass_example, fail_example}]}. The same NAME@VERSION with the same content is a "
        "no-op; with different content it is refused (bump the version). Formats: docs/formats.md."
    )

    def add_arguments(self, parser):
        parser.add_argument("file", help="rubric file (.json, .yaml or .yml)")
        add_workspace_argument(parser)

    def handle(self, *args, file: str, **options):
        # The workspace once the file is read: a broken file is said first (without asking the database).
        workspace = lambda: chosen_workspace(options["workspace"])  # noqa: E731
        self.stdout.write(run_import(file, import_rubric, workspace=workspace))
