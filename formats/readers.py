"""Reading import files as a stream of records, each with the line it starts on.

Files arrive as bytes (a path on the command line, an upload on the web page)
and must be UTF-8. JSONL and CSV are read line by line, so a file of any size
streams; JSON and YAML documents (rubrics, ADK files, Label Studio exports) are
read whole, but every object in them remembers its line so that problems can
still point at one.
"""

from __future__ import annotations

import codecs
import csv
import json
import re
import sys
from bisect import bisect_right
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from json import decoder as json_decoder
from json import scanner as json_scanner
from pathlib import Path
from typing import Any, BinaryIO

import yaml

from evals.csv_cells import csv_unsafe
from evals.problems import Problems
from evals.record_fields import (
    DUPLICATE_KEY,
    MAX_NESTING,
    TOO_DEEP,
    RepeatedKey,
    ShapeError,
    check_nesting,
    encodable,
    find_shape_error,
    finite_float,
    format_path,
    parse_json_bytes,
    reject_json_constant,
)

from .archives import ArchiveLimits

# A response or transcript cell can be long; the csv module's default cap (128 KiB) is not a format rule.
csv.field_size_limit(min(sys.maxsize, 2**31 - 1))


@dataclass
class Source:
    """An import file: the name used in messages and its bytes."""

    name: str
    stream: BinaryIO
    # How far a compressed file (an Inspect .eval) may expand; None: the bounds of the page and the API.
    archive_limits: ArchiveLimits | None = None

    @property
    def suffix(self) -> str:
        """The meaningful ending of the name, lower case: '.evalset.json', '.jsonl', '.csv', ..."""
        lower = self.name.lower()
        for ending in (".evalset_result.json", ".evalset.json", ".test.json"):
            if lower.endswith(ending):
                return ending
        return Path(lower).suffix


@contextmanager
def open_source(path: str | Path) -> Iterator[Source]:
    """A file named on the command line (it has the command line's larger bounds on compressed files)."""
    with open(path, "rb") as stream:
        yield Source(name=str(path), stream=stream, archive_limits=ArchiveLimits.command_line())


def refuse_unsupported_type(source: Source, problems: Problems, read: tuple[str, ...], what: str) -> None:
    """A name ending in no format of this import (notes.txt) is refused, rather than read as CSV or YAML.

    A name without an ending (a pushed JSON body, the rubric editor) is still told apart by its content.
    """
    if source.suffix and source.suffix not in read:
        raise problems.fatal(
            None,
            None,
            f'unsupported file type "{source.suffix}": {what} are read from {", ".join(read)} files (docs/formats.md)',
        )


def _not_utf8(data: bytes, start: int, line: int, problems: Problems):
    """The message for a byte that is not UTF-8: its value and its column (in characters) on its line."""
    line_start = data.rfind(b"\n", 0, start) + 1
    column = len(data[line_start:start].decode("utf-8", "replace")) + 1
    return problems.fatal(
        line, None, f"not UTF-8 text (byte 0x{data[start]:02x} at column {column}); save the file as UTF-8"
    )


def _decode(raw: bytes, line: int, problems: Problems) -> str:
    try:
        return raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise _not_utf8(raw, exc.start, line, problems) from None


def _check_start(first: bytes, problems: Problems) -> bytes:
    if first.startswith((codecs.BOM_UTF16_LE, codecs.BOM_UTF16_BE)):
        raise problems.fatal(1, None, "the file is UTF-16 text; save it as UTF-8 and try again")
    return first[len(codecs.BOM_UTF8) :] if first.startswith(codecs.BOM_UTF8) else first


def iter_lines(source: Source, problems: Problems) -> Iterator[tuple[int, str]]:
    """(line number, text) for every physical line, decoded as UTF-8 (a BOM is dropped)."""
    for number, raw in enumerate(source.stream, start=1):
        if number == 1:
            raw = _check_start(raw, problems)
        yield number, _decode(raw, number, problems)


def read_text(source: Source, problems: Problems) -> str:
    data = _check_start(source.stream.read(), problems)
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise _not_utf8(data, exc.start, data.count(b"\n", 0, exc.start) + 1, problems) from None


def iter_jsonl(source: Source, problems: Problems) -> Iterator[tuple[int, Any]]:
    """(line, parsed value) per non-blank line; a line that is not JSON becomes a problem."""
    loads = parse_json_bytes
    for number, raw in enumerate(source.stream, start=1):
        if number == 1:
            raw = _check_start(raw, problems)
        if not raw.strip():
            continue
        try:
            value = loads(raw)
        except ShapeError as exc:
            problems.add(number, exc.path or None, exc.message)
            continue
        except ValueError as exc:  # UnicodeDecodeError is one too
            _decode(raw, number, problems)  # bad UTF-8 is the more useful message
            problems.add(number, None, f"not valid JSON ({_json_error(exc)})")
            continue
        yield number, value


def _json_error(exc: ValueError) -> str:
    if isinstance(exc, json.JSONDecodeError):
        return f"{exc.msg} at column {exc.colno}"
    return str(exc)


def iter_csv(
    source: Source, problems: Problems, check_header: Callable[[set[str], int], None] | None = None
) -> Iterator[tuple[int, dict[str, str]]]:
    """(line the record starts on, {column: cell}) per record; the first record is the header.

    `check_header(columns, line)` runs as soon as the header is read, so a bad header is reported
    even when no record follows it. Cells come back as exported values were (evals.csv_cells.csv_unsafe).
    """
    last = [0]

    def lines() -> Iterator[str]:
        for number, text in iter_lines(source, problems):
            last[0] = number
            yield text

    # strict: an unclosed quote at the end of the file is an error, not a silently shortened row.
    reader = csv.reader(lines(), strict=True)
    header: list[str] | None = None
    while True:
        start = last[0] + 1
        try:
            cells = next(reader)
        except StopIteration:
            return
        except csv.Error as exc:
            raise problems.fatal(start, None, f"not valid CSV ({exc})") from None
        if not cells or (len(cells) == 1 and not cells[0].strip()):
            continue
        if header is None:
            header = [c.strip() for c in cells]
            _check_header(header, start, problems)
            if check_header:
                check_header(set(header), start)
            continue
        if len(cells) != len(header):
            problems.add(start, None, f"expected {len(header)} cells like the header, found {len(cells)}")
            continue
        yield start, dict(zip(header, map(csv_unsafe, cells), strict=True))


def _check_header(header: list[str], line: int, problems: Problems) -> None:
    if len(header) == 1 and ";" in header[0]:
        raise problems.fatal(line, None, "the header is separated by semicolons; save the file with commas")
    seen: set[str] = set()
    for name in header:
        if not name:
            raise problems.fatal(line, None, "the header has an empty column name")
        if name in seen:
            raise problems.fatal(line, name, "the header names this column twice")
        seen.add(name)


# --- JSON and YAML documents whose objects remember their line -------------------------------------------


class Obj(dict):
    """A JSON/YAML object read from a document, with the line it starts on."""

    line: int = 0


class Arr(list):
    """A JSON/YAML array read from a document, with the line it starts on."""

    line: int = 0


def load_json_document(text: str, problems: Problems, root: str = "") -> Any:
    """Parse a whole JSON document; objects and arrays become Obj/Arr carrying their line.

    A key twice in one object is refused (json.loads would keep the last one silently), and so is nesting
    deeper than MAX_NESTING (before parsing, which would otherwise recurse that deep): fields.ShapeError.
    """
    newlines = [m.start() for m in re.finditer("\n", text)]

    def line_at(offset: int) -> int:
        return bisect_right(newlines, offset - 1) + 1

    try:
        check_nesting(text)
    except ShapeError as exc:
        raise problems.fatal(line_at(exc.offset), _rooted(root, exc.path), exc.message) from None

    dec = json.JSONDecoder(parse_constant=reject_json_constant, parse_float=finite_float)

    def parse_object(s_and_end, strict, scan_once, object_hook, object_pairs_hook, memo=None):
        start = s_and_end[1] - 1
        # The json module's own object and array parsers (the C scanner calls them too); typeshed omits them.
        pairs, end = json_decoder.JSONObject(s_and_end, strict, scan_once, None, list, memo)  # type: ignore[attr-defined]
        obj = Obj(pairs)
        if len(obj) != len(pairs):
            raise RepeatedKey
        obj.line = line_at(start)
        return obj, end

    def parse_array(s_and_end, scan_once):
        start = s_and_end[1] - 1
        values, end = json_decoder.JSONArray(s_and_end, scan_once)  # type: ignore[attr-defined]
        arr = Arr(values)
        arr.line = line_at(start)
        return arr, end

    # JSONDecoder's hooks that py_make_scanner reads; typeshed leaves them and py_make_scanner out.
    dec.parse_object = parse_object  # type: ignore[attr-defined]
    dec.parse_array = parse_array  # type: ignore[attr-defined]
    dec.scan_once = json_scanner.py_make_scanner(dec)  # type: ignore[attr-defined]
    try:
        value = dec.decode(text)
    except RepeatedKey:
        shape = find_shape_error(text) or ShapeError("", DUPLICATE_KEY)  # where: the same walk as for JSON lines
        raise problems.fatal(line_at(shape.offset), _rooted(root, shape.path), shape.message) from None
    except json.JSONDecodeError as exc:
        raise problems.fatal(exc.lineno, None, f"not valid JSON ({exc.msg} at column {exc.colno})") from None
    except ValueError as exc:
        raise problems.fatal(None, None, f"not valid JSON ({exc})") from None
    if ("\\ud" in text or "\\uD" in text) and not encodable(value):
        raise problems.fatal(None, None, "contains an unpaired \\uD800-\\uDFFF escape, which is not valid Unicode")
    return value


def _rooted(root: str, path: str) -> str | None:
    """A path inside a document as its reader's messages name it: `root` ("tasks") before a leading index."""
    return (root + path if path.startswith("[") else path) or None


class _LineLoader(yaml.SafeLoader):
    """SafeLoader whose mappings and sequences remember their line, refuse duplicate keys and deep nesting."""

    def __init__(self, stream) -> None:
        super().__init__(stream)
        self.steps: list = []  # where the collection being composed sits: keys and indexes

    def compose_node(self, parent, index):
        # PyYAML composes (and constructs) recursively, several frames per level: refuse a document nested
        # deeper than MAX_NESTING before it gets anywhere near Python's recursion limit.
        event = self.peek_event()
        if not isinstance(event, yaml.CollectionStartEvent):
            return super().compose_node(parent, index)
        if parent is not None:
            self.steps.append(index if isinstance(index, int) else getattr(index, "value", "?"))
        try:
            if len(self.steps) >= MAX_NESTING:
                line = event.start_mark.line + 1 if event.start_mark else None  # a parsed event always has one
                raise ShapeError(format_path(self.steps), TOO_DEEP, line=line)
            return super().compose_node(parent, index)
        finally:
            if parent is not None:
                self.steps.pop()


def _construct_mapping(loader: _LineLoader, node: yaml.MappingNode) -> Obj:
    obj = Obj()
    obj.line = node.start_mark.line + 1
    loader.flatten_mapping(node)
    for key_node, value_node in node.value:
        key = loader.construct_object(key_node, deep=True)
        if key in obj:
            raise ShapeError(str(key), DUPLICATE_KEY, line=key_node.start_mark.line + 1)
        obj[key] = loader.construct_object(value_node, deep=True)
    return obj


def _construct_sequence(loader: _LineLoader, node: yaml.SequenceNode) -> Arr:
    arr = Arr(loader.construct_object(child, deep=True) for child in node.value)
    arr.line = node.start_mark.line + 1
    return arr


_LineLoader.add_constructor(yaml.resolver.BaseResolver.DEFAULT_MAPPING_TAG, _construct_mapping)
_LineLoader.add_constructor(yaml.resolver.BaseResolver.DEFAULT_SEQUENCE_TAG, _construct_sequence)


def load_yaml_document(text: str, problems: Problems) -> Any:
    try:
        return yaml.load(text, Loader=_LineLoader)  # noqa: S506 - a SafeLoader subclass
    except ShapeError as exc:
        raise problems.fatal(exc.line, exc.path or None, exc.message) from None
    except yaml.MarkedYAMLError as exc:
        mark = exc.problem_mark or exc.context_mark
        line = mark.line + 1 if mark else None
        raise problems.fatal(line, None, f"not valid YAML ({exc.problem or exc.context})") from None
    except yaml.YAMLError as exc:
        raise problems.fatal(None, None, f"not valid YAML ({exc})") from None
    except TypeError:  # a list or mapping used as a key
        raise problems.fatal(None, None, "not valid YAML for a rubric (a key is a list or a mapping)") from None


def peek_first_line(source: Source, limit: int = 1 << 16) -> bytes:
    """The first non-blank line (up to `limit` bytes), leaving the stream where it was."""
    position = source.stream.tell()
    head = source.stream.read(limit)
    source.stream.seek(position)
    for raw in head.splitlines():
        if raw.strip():
            return raw.strip()
    return b""
