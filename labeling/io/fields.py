"""Checking one field of one record: types, blanks, lengths, characters the database cannot store.

Each helper returns the clean value or raises RecordError naming the field;
the caller adds the line. Both databases must reject the same input (a NUL
character is fine for SQLite but not for PostgreSQL), so the rules live here,
not in whatever the database happens to refuse.
"""

from __future__ import annotations

import json
import math
from typing import Any

import orjson

from .errors import RecordError


def reject_json_constant(name: str) -> Any:
    raise ValueError(f"{name} is not a JSON number")


def finite_float(text: str) -> float:
    value = float(text)
    if not math.isfinite(value):
        raise ValueError(f"{text} is too large for a JSON number")
    return value


# NaN, Infinity and 1e400 are accepted by Python's json but are not JSON numbers (jsonb refuses them).
_decoder = json.JSONDecoder(parse_constant=reject_json_constant, parse_float=finite_float)
_stdlib_canonical = json.JSONEncoder(ensure_ascii=False, sort_keys=True, separators=(",", ":")).encode
# orjson reads an integer of 19+ digits as a float (losing digits); lines with such a run of digits go to
# the exact stdlib parser. Mapping every byte to "0" (digit) or " " and searching for 19 zeros costs a
# microsecond where a regular expression costs a hundred.
_DIGIT_MAP = bytes(ord("0") if 48 <= b <= 57 else ord(" ") for b in range(256))
_LONG_DIGITS = b"0" * 19


def parse_json(text: str) -> Any:
    """json.loads without NaN/Infinity; raises ValueError (JSONDecodeError is one) on bad input."""
    value = _decoder.decode(text)
    if ("\\ud" in text or "\\uD" in text) and not encodable(value):
        raise ValueError("an unpaired \\uD800-\\uDFFF escape is not valid Unicode")
    return value


def parse_json_bytes(raw: bytes) -> Any:
    """One JSON value from UTF-8 bytes: orjson (about twice as fast as json here), exact for long integers.

    Raises ValueError (bad JSON) or UnicodeDecodeError (bad UTF-8).
    """
    if _LONG_DIGITS in raw.translate(_DIGIT_MAP):
        return parse_json(raw.decode("utf-8"))
    return orjson.loads(raw)


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
    """An identifier such as a case_id or agent_version: non-empty text (a whole number is accepted)."""
    if value is None or value == "":
        if default is not None:
            return default
        raise RecordError(field, "is missing" if value is None else "is empty")
    if isinstance(value, int) and not isinstance(value, bool):
        value = str(value)
    elif not isinstance(value, str):
        raise RecordError(field, f"must be text, not {json_type(value)}")
    if value != value.strip():
        raise RecordError(field, f"must not start or end with spaces: {value!r}")
    if len(value) > max_length:
        raise RecordError(field, f"is longer than {max_length} characters")
    _no_nul(value, field)
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


def json_object(value: Any, field: str, from_csv: bool = False) -> dict:
    """A JSON object (a CSV cell holds it as JSON text); missing or empty means {}."""
    if from_csv:
        if value is None or not value.strip():
            return {}
        try:
            value = parse_json(value)
        except ValueError as exc:
            raise RecordError(field, f"is not valid JSON ({exc})") from None
    if value is None:
        return {}
    if not isinstance(value, dict):
        raise RecordError(field, f"must be a JSON object, not {json_type(value)}")
    return value


def json_list(value: Any, field: str, from_csv: bool = False) -> list:
    if from_csv:
        if value is None or not value.strip():
            return []
        try:
            value = parse_json(value)
        except ValueError as exc:
            raise RecordError(field, f"is not valid JSON ({exc})") from None
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
