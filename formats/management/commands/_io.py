"""What the import commands share: open the file, run the importer, turn its failure into a CommandError."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from django.core.management.base import CommandError

from evals.problems import ImportFailed
from formats.import_summary import ImportReport
from formats.readers import open_source


def run_import(path: str, importer: Callable[..., ImportReport], **kwargs) -> str:
    if not Path(path).is_file():
        raise CommandError(f"{path}: no such file")
    try:
        with open_source(path) as source:
            report = importer(source=source, **kwargs)
    except ImportFailed as exc:
        raise CommandError(str(exc)) from None
    return str(report)
