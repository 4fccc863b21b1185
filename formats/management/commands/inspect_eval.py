"""python manage.py inspect_eval TASK [inspect eval options]: `inspect eval` on a machine without network."""

from __future__ import annotations

import argparse

from django.core.management.base import BaseCommand, CommandError

from formats.inspect_offline import inspect_eval


class Command(BaseCommand):
    help = (
        "Run Inspect AI's `inspect eval` with the same arguments (the task first, e.g. `inspect_eval task.py "
        "--model mockllm/model --log-dir logs`), counting tokens by words instead of with tiktoken's encoding, "
        "which inspect_ai would download on first use: for writing logs with the mock model without network. "
        "Docs: docs/formats.md, Inspect AI eval logs."
    )

    def add_arguments(self, parser):
        parser.add_argument(
            "inspect_args", nargs=argparse.REMAINDER, help="what `inspect eval` takes: the task file, then its options"
        )

    def handle(self, *args, **options):
        if not options["inspect_args"]:
            raise CommandError("name the task, as for inspect eval: inspect_eval task.py --model mockllm/model")
        status = inspect_eval(options["inspect_args"])
        if status:
            raise CommandError(f"inspect eval ended with exit status {status}")
