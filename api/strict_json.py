"""JSON request bodies and query parameters, read with the import files' rules (docs/formats.md, shared rules).

Every JSON body the API takes (judge runs, the gate at both its addresses, pushed records, OTLP/JSON traces) is read
here, so a body is refused for whatever a file would be refused for: not UTF-8, not JSON, NaN or Infinity, a key
twice in one object (a plain reader would keep the last one silently: `{"outcome": "FAIL", "outcome": "PASS"}` would
count as PASS), nesting deeper than MAX_NESTING (Python's parser would recurse until it crashes). And, since every
text in a body ends up stored or compared in the database, a NUL character or a lone surrogate (`"\\ud800"`, which
is not Unicode) anywhere in it, in keys as in values: PostgreSQL cannot hold either.
"""

from __future__ import annotations

import codecs
import json
from collections.abc import Iterable, Mapping
from typing import Any

from evals.problems import Problem, suggest
from evals.record_fields import ShapeError, format_path, parse_json

NUL = "contains a NUL character (\\u0000), which cannot be stored"
SURROGATE = "contains an unpaired \\uD800-\\uDFFF escape, which is not valid Unicode"


class BodyRefused(ValueError):
    """A body (or query parameter) that is refused; `problem` says where, in the import problems' shape."""

    def __init__(self, problem: Problem) -> None:
        super().__init__(str(problem))
        self.problem = problem


def _refused(path: str, message: str) -> BodyRefused:
    return BodyRefused(Problem("body", None, path or None, message))


def parse_json_body(raw: bytes, *, keep_nul: bool = False) -> Any:
    """The JSON value of a request body; BodyRefused naming the path (`records[3].outcome`) of what is wrong.

    `keep_nul`: NUL characters are the caller's to deal with (the traces receiver replaces them, as it does in
    protobuf bodies, rather than refuse an exporter's whole batch)."""
    if raw.startswith(codecs.BOM_UTF8):  # as in files: tolerated, and not part of the value
        raw = raw[len(codecs.BOM_UTF8) :]
    if not raw.strip():
        raise _refused("", "the body is empty: send a JSON object")
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise _refused("", f"not UTF-8 text (byte 0x{raw[exc.start]:02x} at byte {exc.start + 1})") from None
    try:
        value = parse_json(text)  # NaN/Infinity, repeated keys and nesting, as for a JSON line of a file
    except ShapeError as exc:
        raise _refused(exc.path, exc.message) from None
    except json.JSONDecodeError as exc:
        raise _refused("", f"not valid JSON ({exc.msg} at line {exc.lineno}, column {exc.colno})") from None
    except ValueError as exc:
        if "unpaired" not in str(exc):
            raise _refused("", f"not valid JSON ({exc})") from None
        value = json.loads(text)  # valid JSON with a lone surrogate somewhere: the walk below says where
    # Nesting is at most MAX_NESTING by now, so walking the value cannot go deep.
    for steps, text_in_value in _texts(value, []):
        if "\x00" in text_in_value and not keep_nul:
            raise _refused(format_path(steps), NUL)
        if not _is_unicode(text_in_value):
            raise _refused(format_path(steps), SURROGATE)
    return value


def _texts(value: Any, steps: list) -> Iterable[tuple[list, str]]:
    """(path, text) of every key and every string in a JSON value."""
    if isinstance(value, str):
        yield steps, value
    elif isinstance(value, dict):
        for key, item in value.items():
            yield [*steps, _shown(key)], key
            yield from _texts(item, [*steps, _shown(key)])
    elif isinstance(value, list):
        for index, item in enumerate(value):
            yield from _texts(item, [*steps, index])


def _shown(key: str) -> str:
    """A key as a message may show it: NUL and lone surrogates written as escapes, not sent back as they came."""
    return key.encode("utf-8", "backslashreplace").decode("utf-8").replace("\x00", "\\u0000")


def _is_unicode(text: str) -> bool:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def check_query(items: Iterable[tuple[str, list[str]]]) -> None:
    """BodyRefused (from "query") for a parameter whose name or value holds a NUL character.

    Query strings are decoded with replacement characters, so only NUL (%00) gets this far; the database cannot
    compare a text holding one, and no name holds one.
    """
    for name, values in items:
        if "\x00" in name or any("\x00" in v for v in values):
            raise BodyRefused(Problem("query", None, _shown(name), NUL))


def schema_problems(errors: Iterable[Mapping[str, Any]], known: Iterable[str] = ()) -> list[Problem]:
    """pydantic's errors about a body or query (its `loc`, `type` and `msg`) as problems, in our words where theirs
    say less. `loc` starts with "body" or "query" (the source; a body parameter's own name after it is dropped),
    or is the field's path in a body (the HTTP gate validates the body itself)."""
    known = sorted(known)
    problems = []
    for error in errors:
        loc = list(error.get("loc") or ())
        source = "body"
        if loc and loc[0] in ("body", "query", "path"):
            source = loc.pop(0)
            if source == "body" and len(loc) > 1:
                loc.pop(0)  # ninja's name for the body parameter ("payload"): not part of what was sent
        field = format_path([step if isinstance(step, int) else _shown(str(step)) for step in loc]) or None
        problems.append(Problem(source, None, field, _schema_message(error, field, known)))
    return problems


def _schema_message(error: Mapping[str, Any], field: str | None, known: list[str]) -> str:
    kind = error.get("type", "")
    if kind == "extra_forbidden":
        hint = suggest(field or "", known) + (f"; known fields: {', '.join(known)}" if known else "")
        return f"unknown field{hint} (a misspelt field is refused, not ignored)"
    if kind == "missing":
        return "is missing"
    if kind == "string_pattern_mismatch" and field == "rubric":  # the gate's, judge runs' and report's NAME@VERSION
        return "must be written NAME@VERSION"
    return error.get("msg", "is not valid")
