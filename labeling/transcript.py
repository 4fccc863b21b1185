"""The transcript of an output, and checking that an evidence quote really is in it.

Annotators and judges both quote the transcript (input, tool calls with their
arguments and results, response). A quote counts when it appears verbatim after
whitespace is normalized; the word NONE says "nothing to quote" explicitly.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from functools import cached_property
from typing import Any

NONE_QUOTE = "NONE"
_WS = re.compile(r"\s+")


def normalize_ws(text: str) -> str:
    return _WS.sub(" ", text).strip()


# json.dumps with these options builds a new encoder at every call; one encoder, made once, writes the
# same text (a judge lane renders every tool call of every output it grades).
_ENCODER = json.JSONEncoder(ensure_ascii=False, sort_keys=True)


def render_json(value: Any) -> str:
    """Tool arguments and results as people read them: strings bare, the rest as JSON."""
    if isinstance(value, str):
        return value
    return _ENCODER.encode(value)


@dataclass(frozen=True)
class Transcript:
    input: str
    tool_calls: list[dict]
    response: str

    @classmethod
    def of(cls, output: Any) -> Transcript:
        """Build from an Output (with its case loaded)."""
        return cls(input=output.case.input, tool_calls=list(output.tool_calls or []), response=output.response)

    def parts(self) -> list[str]:
        """Every quotable piece of text, in reading order."""
        pieces = [self.input]
        for call in self.tool_calls:
            pieces.append(str(call.get("name", "")))
            pieces.append(render_json(call.get("args", "")))
            pieces.append(render_json(call.get("response", "")))
        pieces.append(self.response)
        return pieces

    @cached_property
    def _normalized_parts(self) -> tuple[str, ...]:
        # Once per transcript: a judge's answer is checked quote by quote, criterion by criterion.
        return tuple(normalize_ws(piece) for piece in self.parts())

    def contains(self, quote: str) -> bool:
        """True when the quote is NONE or appears in one piece of the transcript."""
        needle = normalize_ws(quote)
        if not needle:
            return False
        if needle == NONE_QUOTE:
            return True
        return any(needle in piece for piece in self._normalized_parts)


def quote_pattern(quote: str) -> re.Pattern[str] | None:
    """A regex that finds the quote in the original text, whatever the whitespace."""
    words = quote.split()
    if not words or normalize_ws(quote) == NONE_QUOTE:
        return None
    return re.compile(r"\s+".join(re.escape(w) for w in words))


def highlight(text: str, quotes: dict[str, str]) -> str:
    """HTML-escape `text` and wrap every place a quote occurs in <mark class="KEY">.

    `quotes` maps a CSS class (e.g. "hl-a", "hl-judge") to a quote. Overlapping
    quotes get both classes. Returns a safe string; the transcript is untrusted,
    so nothing of it reaches the page unescaped.
    """
    from django.utils.html import escape
    from django.utils.safestring import mark_safe

    marks: list[set[str]] = [set() for _ in range(len(text))]
    for css_class, quote in quotes.items():
        pattern = quote_pattern(quote or "")
        if pattern is None:
            continue
        for match in pattern.finditer(text):
            for i in range(match.start(), match.end()):
                marks[i].add(css_class)
    out: list[str] = []
    i = 0
    while i < len(text):
        j = i
        while j < len(text) and marks[j] == marks[i]:
            j += 1
        chunk = escape(text[i:j])
        if marks[i]:
            classes = " ".join(sorted(marks[i]))
            out.append(f'<mark class="{classes}">{chunk}</mark>')
        else:
            out.append(chunk)
        i = j
    return mark_safe("".join(out))  # noqa: S308 - every piece above went through escape()
