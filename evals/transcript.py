"""The transcript of an output, and checking that an evidence quote really is in it.

Annotators and judges both quote the transcript (input, tool calls with their
arguments and results, response). A quote counts when it appears verbatim after
whitespace is normalized; the word NONE says "nothing to quote" explicitly.
"""

from __future__ import annotations

import bisect
import json
import re
from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass
from functools import cached_property
from typing import Any

from django.utils.html import escape
from django.utils.safestring import SafeString, mark_safe

NONE_QUOTE = "NONE"
RESPONSE = "response"
# Quotes one label may carry. Real span annotations have up to 6 per item (FaithBench); more than that is
# no longer "the part that decides it", and each quote is checked against the whole transcript.
MAX_QUOTES = 6
_WS = re.compile(r"\s+")


def quotes_of(evidence: str, more_evidence=()) -> list[str]:
    """A label's quotes in order: its evidence (unless empty or NONE, no quote) and its further quotes."""
    first = [evidence] if evidence and evidence != NONE_QUOTE else []
    return first + list(more_evidence or ())


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

    def found_in(self, quote: str) -> list[str]:
        """Where the quote is, in reading order: "input", "tool call N" (its name, arguments or result),
        "response"; empty for NONE or a quote that is not there."""
        needle = normalize_ws(quote)
        if not needle or needle == NONE_QUOTE:
            return []
        parts = self._normalized_parts
        places = ["input"] if needle in parts[0] else []
        for i in range(len(self.tool_calls)):
            if any(needle in piece for piece in parts[1 + 3 * i : 4 + 3 * i]):
                places.append(f"tool call {i + 1}")
        if needle in parts[-1]:
            places.append(RESPONSE)
        return places

    def outside_response_only(self, quotes: list[str]) -> int:
        """How many of `quotes` are in the transcript but not in the response (the agent's own words)."""
        return sum(1 for q in quotes if (places := self.found_in(q)) and RESPONSE not in places)

    def contains(self, quote: str) -> bool:
        """True when the quote is NONE or appears in one piece of the transcript."""
        needle = normalize_ws(quote)
        if not needle:
            return False
        if needle == NONE_QUOTE:
            return True
        return any(needle in piece for piece in self._normalized_parts)


# A text longer than this (an input, a tool call's arguments or result, a response) shows its beginning and
# a "Show all" link: an agent can paste a multi-megabyte document into a tool result, and a page that
# carries all of it is slow to send, to lay out and to select text in. 20,000 characters is about ten
# printed pages, more than anyone reads closely in one part; the whole text is a click away.
PREVIEW_CHARS = 20_000
# Likewise the tool calls shown before "Show all" (a looping agent can make thousands).
PREVIEW_TOOL_CALLS = 50
# Places marked per quote at most: a short quote ("the") can occur everywhere in a long text.
MAX_MARKS_PER_QUOTE = 200

_LONG_WS = re.compile(r"\s{2,}")


def find_quote(text: str, quote: str, limit: int = MAX_MARKS_PER_QUOTE) -> list[tuple[int, int]]:
    """Where `quote` occurs in `text` whatever the whitespace, as (start, end) positions in `text`, in order,
    not overlapping, at most `limit` of them. NONE and an empty quote occur nowhere.

    Linear in the length of `text`: the search is str.find on the whitespace-normalized text, and a
    position found there is mapped back through the runs of whitespace that normalizing shortened
    (a regular expression with \\s+ between the words can take time proportional to the text times the
    quote's words, on a text that repeats the quote's beginning).
    """
    needle = normalize_ws(quote)
    if not needle or needle == NONE_QUOTE:
        return []
    flat = _WS.sub(" ", text)  # not stripped: flat[i] is text[i] until the first run of 2+ whitespace
    run_at: list[int] = []  # where each shortened run stands in `flat`
    removed: list[int] = []  # characters removed by that run and every run before it
    total = 0
    for run in _LONG_WS.finditer(text):
        run_at.append(run.start() - total)
        total += run.end() - run.start() - 1
        removed.append(total)

    def original(i: int) -> int:  # `flat` position -> `text` position (for a character that is not whitespace)
        k = bisect.bisect_left(run_at, i)  # the runs before flat position i
        return i + (removed[k - 1] if k else 0)

    found: list[tuple[int, int]] = []
    at = flat.find(needle)
    while at != -1 and len(found) < limit:
        found.append((original(at), original(at + len(needle) - 1) + 1))
        at = flat.find(needle, at + len(needle))
    return found


@dataclass(frozen=True)
class Shown:
    """A text as a page shows it: `html` is its first `shown` characters (all `length` unless cut), escaped,
    with the quotes marked; `quoted_further`: a quote occurs past what is shown."""

    html: SafeString
    length: int
    shown: int
    quoted_further: bool = False

    @property
    def cut(self) -> bool:
        return self.shown < self.length

    @property
    def length_text(self) -> str:
        return f"{self.length:,}"

    @property
    def shown_text(self) -> str:
        return f"{self.shown:,}"


def show(text: str, quotes: Mapping[str, str | list[str]], limit: int | None = None) -> Shown:
    """`text` escaped (it is untrusted), cut after `limit` characters if longer, each place a quote occurs
    wrapped in <mark class="KEY">. `quotes` maps a CSS class (e.g. "hl-a", "hl-judge") to a quote or a
    list of quotes; overlapping quotes get both classes. Time and size are linear in the text, whatever the quotes."""
    shown = len(text) if limit is None else min(len(text), limit)
    spans: list[tuple[int, int, str]] = []
    further = False
    for css_class, quote in quotes.items():
        for one in [quote] if isinstance(quote, str) or quote is None else quote:  # one quote or several
            for start, end in find_quote(text, one or ""):
                if start >= shown:
                    further = True
                    break
                spans.append((start, min(end, shown), css_class))
    return Shown(html=_marked(text[:shown], spans), length=len(text), shown=shown, quoted_further=further)


def _marked(text: str, spans: list[tuple[int, int, str]]) -> SafeString:
    """`text` escaped, with <mark> around each span (start, end, css class); a sweep over the spans' ends."""
    events = sorted([(start, 1, css) for start, _, css in spans] + [(end, -1, css) for _, end, css in spans])
    active: Counter[str] = Counter()
    pieces: list[tuple[str, str]] = []  # (classes, text), neighbours with the same classes merged
    at = 0
    for point, change, css in [*events, (len(text), 0, "")]:
        if point > at:
            classes = " ".join(sorted(c for c, n in active.items() if n > 0))
            if pieces and pieces[-1][0] == classes:
                pieces[-1] = (classes, pieces[-1][1] + text[at:point])
            else:
                pieces.append((classes, text[at:point]))
            at = point
        active[css] += change
    html = "".join(
        f'<mark class="{classes}">{escape(chunk)}</mark>' if classes else escape(chunk) for classes, chunk in pieces
    )
    return mark_safe(html)  # noqa: S308 - every piece of text went through escape(); the classes are the caller's


def highlight(text: str, quotes: Mapping[str, str | list[str]]) -> SafeString:
    """All of `text`, escaped, with every place a quote occurs marked (see show)."""
    return show(text, quotes).html
