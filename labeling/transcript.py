"""The transcript of an output, and checking that an evidence quote really is in it.

Annotators and judges both quote the transcript (input, tool calls with their
arguments and results, response). A quote counts when it appears verbatim after
whitespace is normalized; the word NONE says "nothing to quote" explicitly.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any

NONE_QUOTE = "NONE"
_WS = re.compile(r"\s+")


def normalize_ws(text: str) -> str:
    return _WS.sub(" ", text).strip()


def render_json(value: Any) -> str:
    """Tool arguments and results as people read them: strings bare, the rest as JSON."""
    if isinstance(value, str):
        return value
    return json.dumps(value, ensure_ascii=False, sort_keys=True)


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

    def contains(self, quote: str) -> bool:
        """True when the quote is NONE or appears in one piece of the transcript."""
        needle = normalize_ws(quote)
        if not needle:
            return False
        if needle == NONE_QUOTE:
            return True
        return any(needle in normalize_ws(piece) for piece in self.parts())
