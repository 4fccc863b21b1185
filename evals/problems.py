"""What went wrong in an import, and where: file, line and field, in words a lead can act on.

An import collects problems instead of stopping at the first one (a renamed
column shows up on every line: seeing a few lines at once makes the pattern
obvious), then fails as a whole so that nothing is half-written.
"""

from __future__ import annotations

import difflib
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

# Enough to show a pattern (a renamed column, a wrong outcome spelling) without
# burying the first, usually most telling, problem under hundreds of repeats.
MAX_PROBLEMS = 20


@dataclass(frozen=True)
class Problem:
    file: str
    line: int | None
    field: str | None
    message: str

    def __str__(self) -> str:
        where = self.file
        if self.line is not None:
            where += f", line {self.line}"
        if self.field:
            where += f', field "{self.field}"'
        return f"{where}: {self.message}"

    def as_dict(self) -> dict:
        """The problem in an API error answer (docs/api.md, Errors): `text` is the line the command would print."""
        return {"line": self.line, "field": self.field, "message": self.message, "text": str(self)}


class ImportFailed(Exception):
    """The file was rejected; the database is as it was before the import started."""

    def __init__(self, problems: list[Problem], truncated: bool = False) -> None:
        self.problems = sorted(problems, key=lambda p: p.line or 0)
        self.truncated = truncated
        super().__init__(str(self))

    @property
    def messages(self) -> list[str]:
        return [str(p) for p in self.problems]

    def __str__(self) -> str:
        lines = self.messages
        if self.truncated:
            lines.append(f"(stopped after {len(self.problems)} problems; there may be more)")
        lines.append("Nothing was imported.")
        return "\n".join(lines)


class Problems:
    """Collects the problems of one file; full at MAX_PROBLEMS, when the import gives up."""

    def __init__(self, file: str, limit: int = MAX_PROBLEMS) -> None:
        self.file = file
        self.limit = limit
        self.items: list[Problem] = []

    def __bool__(self) -> bool:
        return bool(self.items)

    def __len__(self) -> int:
        return len(self.items)

    def add(self, line: int | None, field: str | None, message: str) -> None:
        self.items.append(Problem(self.file, line, field, message))
        if len(self.items) >= self.limit:
            raise ImportFailed(self.items, truncated=True)

    def fatal(self, line: int | None, field: str | None, message: str) -> ImportFailed:
        """A problem after which reading on makes no sense (wrong encoding, wrong kind of file)."""
        self.items.append(Problem(self.file, line, field, message))
        return ImportFailed(self.items)

    def raise_if_any(self) -> None:
        if self.items:
            raise ImportFailed(self.items)


def error_body(message: str, problems: Iterable[Problem] = (), **extra) -> dict:
    """The one shape of every API error answer (docs/api.md, Errors): what went wrong and what to do, and the
    problems behind it (none when the message says it all), plus any details the answer names (limit_bytes, ...)."""
    return {"error": message, "problems": [p.as_dict() for p in problems], **extra}


class RecordError(Exception):
    """Raised while reading one record; the caller turns it into a Problem with the record's line."""

    def __init__(self, field: str | None, message: str, line: int | None = None) -> None:
        super().__init__(message)
        self.field = field
        self.message = message
        self.line = line


def suggest(word: str, choices: Iterable[str]) -> str:
    """' (did you mean "x"?)' for a near miss, else ''."""
    close = difflib.get_close_matches(word, list(choices), n=1, cutoff=0.75)
    return f' (did you mean "{close[0]}"?)' if close else ""


def line_of(value: Any, default: int | None = None) -> int | None:
    """The line a JSON/YAML object or array starts on, as the document readers note it (formats/readers.py)."""
    return getattr(value, "line", default)
