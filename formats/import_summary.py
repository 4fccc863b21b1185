"""What an import did, for the command line and the upload page alike."""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass
class ImportReport:
    file: str
    summary: str
    counts: dict[str, int]
    notes: list[str] = field(default_factory=list)

    def __str__(self) -> str:
        return "\n".join([self.summary, *self.notes])

    @property
    def changed(self) -> bool:
        """False when the import was a no-op (everything already there)."""
        return any(v for k, v in self.counts.items() if k.endswith("_created"))


def plural(n: int, word: str, many: str | None = None) -> str:
    return f"{n:,} {word if n == 1 else (many or word + 's')}"
