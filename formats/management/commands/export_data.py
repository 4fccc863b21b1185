from __future__ import annotations

import os
import tempfile
from pathlib import Path
from typing import IO, cast

from django.core.management.base import BaseCommand, CommandError

from evals.workspace_option import add_workspace_argument, chosen_workspace
from formats.export import FORMATS, ExportError
from formats.verdicts import EXPORT_WHAT, export_data


class _Out:
    """Text sink on the command's stdout, without OutputWrapper's added line endings."""

    def __init__(self, wrapper) -> None:
        self.wrapper = wrapper

    def write(self, text: str) -> int:
        self.wrapper.write(text, ending="")
        return len(text)


class Command(BaseCommand):
    help = (
        "Export cases, labels, gold labels or verdicts of an eval set in the formats the importers read "
        "(import -> export -> import changes nothing). Writes to stdout unless --output is given. "
        "Formats: docs/formats.md."
    )

    def add_arguments(self, parser):
        parser.add_argument("--eval-set", required=True)
        parser.add_argument("--what", required=True, choices=EXPORT_WHAT)
        parser.add_argument("--rubric", help="NAME@VERSION (needed for labels, gold and verdicts)")
        parser.add_argument("--judge", help="judge config name (needed for verdicts)")
        parser.add_argument("--format", dest="fmt", default="jsonl", choices=FORMATS)
        parser.add_argument("--output", help="file to write (replaced only once the export is complete)")
        add_workspace_argument(parser)

    def handle(self, *args, eval_set: str, what: str, rubric, judge, fmt: str, output, **options):
        workspace = chosen_workspace(options["workspace"])
        kwargs = dict(
            workspace=workspace, eval_set_name=eval_set, what=what, fmt=fmt, rubric_ref=rubric, judge_name=judge
        )
        try:
            if not output:
                count = export_data(stream=cast(IO[str], _Out(self.stdout)), **kwargs)  # only write() is used
            else:
                count = self._to_file(Path(output), kwargs)
        except ExportError as exc:
            raise CommandError(str(exc)) from None
        where = output or "stdout"
        self.stderr.write(f"Exported {count:,} record{'s' if count != 1 else ''} ({what}) to {where}.")

    def _to_file(self, path: Path, kwargs: dict) -> int:
        # Write beside the target and rename, so a failed export never leaves a half-written file.
        fd, tmp = tempfile.mkstemp(dir=path.parent or ".", prefix=f".{path.name}.", suffix=".tmp")
        try:
            with os.fdopen(fd, "w", encoding="utf-8", newline="") as stream:
                count = export_data(stream=stream, **kwargs)
            os.replace(tmp, path)
        except BaseException:
            Path(tmp).unlink(missing_ok=True)
            raise
        return count
