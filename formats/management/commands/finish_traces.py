"""Make outputs of the received OpenTelemetry traces that are complete (docs/formats.md, "OpenTelemetry").

A Celery worker does this on its own a few seconds after spans arrive; this command is for a server without a
worker, or to finish traces now (--now: without waiting for the quiet period). It finishes the traces of one
workspace's trace bindings (--workspace).
"""

from __future__ import annotations

from django.core.management.base import BaseCommand, CommandError
from django.db import OperationalError

from evals.workspace_option import add_workspace_argument, chosen_workspace
from evals.workspaces import in_workspace
from formats.models import TraceBinding
from formats.trace_outputs import finish_ready_traces


class Command(BaseCommand):
    help = "Make outputs of the received OpenTelemetry traces that are complete."

    def add_arguments(self, parser) -> None:
        parser.add_argument(
            "--now", action="store_true", help="Do not wait for the quiet period: finish every trace whose root is in."
        )
        add_workspace_argument(parser)

    def handle(self, *args, now: bool = False, **options) -> None:
        workspace = chosen_workspace(options["workspace"])
        for binding in in_workspace(TraceBinding, workspace).select_related("eval_set").order_by("pk"):
            try:
                done = finish_ready_traces(binding_id=binding.pk, quiet_seconds=0 if now else None)
            except OperationalError as exc:  # the batch was rolled back: its spans are still staged
                raise CommandError(
                    f"{binding.eval_set.name}: the database cannot take the write now ({exc}); the spans not yet "
                    "finished are kept: run finish_traces again"
                ) from None
            self.stdout.write(
                f"{binding.eval_set.name}: {done.outputs} output(s) made, {done.sampled_out} trace(s) sampled out, "
                f"{done.rejected} refused, {done.waiting} waiting for their root span"
            )
