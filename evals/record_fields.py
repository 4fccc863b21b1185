"""Checking one field of one record: types, blanks, lengths, characters the database cannot store.

Each helper returns the clean value or raises RecordError naming the field;
the caller adds the line. Both databases must reject the same input (a NUL
character is fine for SQLite but not for PostgreSQL), so the rules live here,
not in whatever the database happens to refuse.
"""

from __future__ import annotations

import json
import math
import re
from typing import Any

import orjson

from evals.validators import name_problem

from .problems import RecordError


def reject_json_constant(name: str) -> Any:
    raise ValueError(f"{name} is not a JSON number")


def finite_float(text: str) -> float:
    value = float(text)
    if not math.isfinite(value):
        raise ValueError(f"{text} is too large for a JSON number")
    return value


# --- the shape of a JSON value: nesting and repeated keys ---------------------------------------------------

# How deeply objects and lists may sit inside each other, in every file an import reads (JSON lines, JSON and
# YAML documents, JSON in CSV cells). The deepest real files nest about 10 levels before a tool's own payload
# (an ADK result: eval_case_results[].eval_metric_result_per_invocation[].actual_invocation.intermediate_data
# .invocation_events[].content.parts[].function_response.response), so 64 leaves room for deep tool payloads
# while everything that walks a value recursively stays far from its limit: Python's json and PyYAML stop with
# a RecursionError at 600-1,000 levels (PyYAML spends several frames per level), orjson's writer at 255.
MAX_NESTING = 64
DUPLICATE_KEY = (
    "this key appears twice in the same object; most readers would silently keep only the last value, so write it once"
)
TOO_DEEP = (
    f"is nested more than {MAX_NESTING} levels deep (objects and lists inside each other); "
    f"Icewater reads at most {MAX_NESTING} levels: flatten it"
)
# How much of a path a message shows: the start says where, the rest of a 64-level path is noise.
_PATH_SHOWN = 6


class ShapeError(ValueError):
    """Valid JSON (or YAML) that an import refuses: a key twice in one object, or nesting deeper than MAX_NESTING.

    `path` locates it inside the value (`metadata.tags[2]`, "" for the value itself); `offset` is the
    character where it starts in the text read, `line` the line when the reader knows it (YAML).
    """

    def __init__(self, path: str, message: str, offset: int = 0, line: int | None = None) -> None:
        super().__init__(f"{path}: {message}" if path else message)
        self.path, self.message, self.offset, self.line = path, message, offset, line


def format_path(steps: list) -> str:
    """['metadata', 'tags', 2] -> 'metadata.tags[2]' (shortened with '...' beyond _PATH_SHOWN steps)."""
    out = ""
    for step in steps[:_PATH_SHOWN]:
        out += f"[{step}]" if isinstance(step, int) else (f".{step}" if out else str(step))
    return out + ("..." if len(steps) > _PATH_SHOWN else "")


# A JSON string (its closing quote found without backtracking), with ":" after it when it is a key; or a
# structural character. Outside strings a quote always opens one, so scanning left to right tokenizes exactly.
_TOKEN = re.compile(r'"[^"\\]*(?:\\.[^"\\]*)*"(\s*:)?|[\[\]{},]')


def find_shape_error(text: str | bytes) -> ShapeError | None:
    """The first too-deep container or repeated key in a JSON text, else None (bad JSON is the parser's to report).

    Walks the tokens once; used when a cheap test (bracket count, parser hook) says there may be one.
    """
    if isinstance(text, bytes):
        text = text.decode("utf-8", "replace")
    steps: list = []  # per open container: the key (object) or index (array) of the child being read
    keys: list[set[str] | None] = []  # per open container: the keys seen so far (None for an array)
    for match in _TOKEN.finditer(text):
        token = match.group()
        first = token[0]
        if first == '"':
            if match.group(1) and keys and keys[-1] is not None:
                key = _key(token[: match.start(1) - match.start()])
                steps[-1] = key
                if key in keys[-1]:
                    return ShapeError(format_path(steps), DUPLICATE_KEY, match.start())
                keys[-1].add(key)
        elif first in "{[":
            if len(steps) == MAX_NESTING:
                return ShapeError(format_path(steps), TOO_DEEP, match.start())
            steps.append("?" if first == "{" else 0)
            keys.append(set() if first == "{" else None)
        elif first in "}]":
            if steps:
                steps.pop()
                keys.pop()
        elif steps and keys[-1] is None:  # a comma between array items
            steps[-1] += 1
    return None


def _key(quoted: str) -> str:
    try:
        return json.loads(quoted)
    except ValueError:
        return quoted[1:-1]


def check_nesting(text: str | bytes) -> None:
    """Raise ShapeError when containers nest deeper than MAX_NESTING (or a key repeats, if the walk sees one).

    Without more opening brackets than the limit (counted in C, strings included) nothing can be too deep:
    almost every line is cleared by that count and never walked.
    """
    opening = text.count("{") + text.count("[") if isinstance(text, str) else text.count(b"{") + text.count(b"[")
    _check_nesting_walk(text, opening)


def _check_nesting_walk(text: str | bytes, opening: int) -> None:
    """Walk the text for a nesting or key error only when it has more opening brackets than the limit."""
    if opening > MAX_NESTING:
        error = find_shape_error(text)
        if error is not None:
            raise error


def _unique_keys(pairs: list[tuple[str, Any]]) -> dict:
    obj = dict(pairs)
    if len(obj) != len(pairs):
        raise RepeatedKey
    return obj


class RepeatedKey(Exception):
    """Raised inside a parser at a repeated key; the caller then finds where it is (find_shape_error)."""


# NaN, Infinity and 1e400 are accepted by Python's json but are not JSON numbers (jsonb refuses them).
_decoder = json.JSONDecoder(
    parse_constant=reject_json_constant, parse_float=finite_float, object_pairs_hook=_unique_keys
)
_stdlib_canonical = json.JSONEncoder(ensure_ascii=False, sort_keys=True, separators=(",", ":")).encode
# The bytes parse_json_bytes counts: a line's brackets (nesting), colons (repeated keys) and backslashes
# (escapes). Deleting every other byte is one pass in C and leaves a few dozen bytes to count, where each
# count of the whole line is a pass of its own.
_NOT_MARKS = bytes(b for b in range(256) if b not in b"{[:\\")
# orjson refuses an integer too large for a float (400 digits) as "infinity"; a line it refuses with a run of
# 19 digits goes to the exact parser. Mapping every byte to "0" (digit) or " " and searching for 19 zeros
# costs a microsecond where a regular expression costs a hundred.
_DIGIT_MAP = bytes(ord("0") if 48 <= b <= 57 else ord(" ") for b in range(256))
_LONG_DIGITS = b"0" * 19


def parse_json(text: str) -> Any:
    """json.loads without NaN/Infinity, repeated keys or too deep nesting.

    Raises ShapeError (repeated key, nesting) or another ValueError (JSONDecodeError is one) on bad input.
    """
    check_nesting(text)
    try:
        value = _decoder.decode(text)
    except RepeatedKey:
        raise find_shape_error(text) or ShapeError("", DUPLICATE_KEY) from None
    if ("\\ud" in text or "\\uD" in text) and not encodable(value):
        raise ValueError("an unpaired \\uD800-\\uDFFF escape is not valid Unicode")
    return value


def parse_json_bytes(raw: bytes) -> Any:
    """One JSON value from UTF-8 bytes: orjson (about twice as fast as json here), exact for long integers.

    Raises ShapeError (repeated key, nesting), another ValueError (bad JSON) or UnicodeDecodeError (bad UTF-8).
    """
    marks = raw.translate(None, _NOT_MARKS)
    _check_nesting_walk(raw, marks.count(b"{") + marks.count(b"["))  # as check_nesting: strings included
    try:
        value = orjson.loads(raw)
    except orjson.JSONDecodeError:
        if _LONG_DIGITS in raw.translate(_DIGIT_MAP):
            return parse_json(raw.decode("utf-8"))
        raise
    written = orjson.dumps(value)
    # Two things orjson does silently go to the exact stdlib parser:
    # - it keeps the last of a repeated key. Outside strings a colon follows every key, and inside them
    #   orjson writes every colon back as ":", so without "\u003a" escapes in the line, the value written
    #   back has exactly as many colons as the line unless a repeated key (and its value) was dropped;
    # - it reads an integer beyond 64 bits (below -2**63 or above 2**64 - 1) as a float, losing digits.
    #   Such a float is at least 9.2e18 in size, and orjson writes every float from 1e16 up with "e+":
    #   no "e+" in the value written back, no such integer (a string holding "e+" only costs the detour).
    if marks.count(b":") != written.count(b":") or b"e+" in written or (b"\\" in marks and b"\\u003" in raw):
        return parse_json(raw.decode("utf-8"))
    return value


def encodable(value: Any) -> bool:
    try:
        json.dumps(value, ensure_ascii=False).encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


def canonical_json(value: Any) -> str:
    """One text per JSON value (keys sorted, no spaces): what is stored, compared and fingerprinted."""
    try:
        return orjson.dumps(value, option=orjson.OPT_SORT_KEYS).decode()
    except TypeError:  # an integer beyond 64 bits, which orjson does not write
        return _stdlib_canonical(value)


def json_type(value: Any) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true/false"
    if isinstance(value, int | float):
        return "a number"
    if isinstance(value, str):
        return "text"
    if isinstance(value, list):
        return "a list"
    if isinstance(value, dict):
        return "an object"
    return type(value).__name__


def _no_nul(value: str, field: str) -> None:
    if "\x00" in value:
        raise RecordError(field, "contains a NUL character (\\u0000), which cannot be stored")


def ident(value: Any, field: str, max_length: int, default: str | None = None) -> str:
    """An identifier such as a case_id or agent_version: non-empty text (a whole number is accepted), one line of
    visible characters (evals/validators.py)."""
    if value is None or value == "":
        if default is not None:
            return default
        raise RecordError(field, "is missing" if value is None else "is empty")
    if isinstance(value, int) and not isinstance(value, bool):
        value = str(value)
    elif not isinstance(value, str):
        raise RecordError(field, f"must be text, not {json_type(value)}")
    _no_nul(value, field)
    problem = name_problem(value)  # line breaks, tabs, invisible characters: evals/validators.py
    if problem:
        raise RecordError(field, problem)
    if len(value) > max_length:
        raise RecordError(field, f"is longer than {max_length} characters")
    return value


def text(value: Any, field: str, required: bool = False, allow_blank: bool = True) -> str:
    if value is None:
        if required:
            raise RecordError(field, "is missing")
        return ""
    if not isinstance(value, str):
        raise RecordError(field, f"must be text, not {json_type(value)}")
    if not allow_blank and not value.strip():
        raise RecordError(field, "is empty")
    _no_nul(value, field)
    return value


def _parse_cell(value: str, field: str) -> Any:
    """The JSON text of a CSV cell, its problems named by the column and the path inside it."""
    try:
        return parse_json(value)
    except ShapeError as exc:
        inside = exc.path if not exc.path or exc.path.startswith("[") else f".{exc.path}"
        raise RecordError(field + inside, exc.message) from None
    except ValueError as exc:
        raise RecordError(field, f"is not valid JSON ({exc})") from None


def json_object(value: Any, field: str, from_csv: bool = False) -> dict:
    """A JSON object (a CSV cell holds it as JSON text); missing or empty means {}."""
    if from_csv:
        if value is None or not value.strip():
            return {}
        value = _parse_cell(value, field)
    if value is None:
        return {}
    if not isinstance(value, dict):
        raise RecordError(field, f"must be a JSON object, not {json_type(value)}")
    return value


def json_list(value: Any, field: str, from_csv: bool = False) -> list:
    if from_csv:
        if value is None or not value.strip():
            return []
        value = _parse_cell(value, field)
    if value is None:
        return []
    if not isinstance(value, list):
        raise RecordError(field, f"must be a JSON list, not {json_type(value)}")
    return value


def stored_json(value: Any, field: str) -> str:
    """The canonical JSON text of a value, refusing what the database cannot store."""
    encoded = canonical_json(value)
    if "\\u0000" in encoded:
        raise RecordError(field, "contains a NUL character (\\u0000), which cannot be stored")
    return encoded


# PostgreSQL `integer` (Django IntegerField): the largest latency the column can hold.
MAX_INT32 = 2**31 - 1


def milliseconds(value: Any, field: str, from_csv: bool = False) -> int | None:
    """A non-negative duration in whole milliseconds; fractions are rounded to the nearest one."""
    if from_csv:
        if value is None or not value.strip():
            return None
        try:
            value = float(value) if any(c in value for c in ".eE") else int(value)
        except ValueError:
            raise RecordError(field, f"must be a number of milliseconds, not {value!r}") from None
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise RecordError(field, f"must be a number of milliseconds, not {json_type(value)}")
    if isinstance(value, float):
        if not math.isfinite(value):
            raise RecordError(field, "must be a finite number")
        value = round(value)
    if value < 0 or value > MAX_INT32:
        raise RecordError(field, f"must be between 0 and {MAX_INT32}, not {value}")
    return value


def json_equal(a: Any, b: Any) -> bool:
    """Equality of JSON values as PostgreSQL's jsonb sees it: numbers by value, true is not 1."""
    if isinstance(a, bool) or isinstance(b, bool):
        return type(a) is type(b) and a == b
    if isinstance(a, dict):
        return isinstance(b, dict) and a.keys() == b.keys() and all(json_equal(a[k], b[k]) for k in a)
    if isinstance(a, list):
        return isinstance(b, list) and len(a) == len(b) and all(json_equal(x, y) for x, y in zip(a, b, strict=True))
    if isinstance(a, int | float) and isinstance(b, int | float):
        return a == b
    return type(a) is type(b) and a == b
