"""The rule for names people read and type: eval sets, case ids, agent versions, rubrics and their versions,
judge configs.

Pages show a name on one line, and a browser draws a line break, a tab or an invisible character as a
space or as nothing: "rc 1" with a tab and "rc 1" with a space would look the same everywhere, yet be two
eval sets. So a name holds no control characters (Unicode category Cc: NUL, tab, line feed, carriage
return, ...), no invisible format characters (Cf: zero-width space and joiners, soft hyphen, bidi
controls), no line or paragraph separators (Zl, Zp: U+2028, U+2029), no other spaces than the ordinary one
(Zs: a no-break space looks like a space but is another character), no lone surrogates (Cs), and no
spaces at either end. Letters of every script are names like
any other ("café-v2", "回答-1").

One rule in one place: the model fields carry `validate_name` (forms, the admin and add_judge get it from
there) and the importers call `name_problem` for every record (evals/record_fields.py `ident`), which the
upload page, the command line and the API's pushes all go through.

Rubrics are referred to as NAME@VERSION everywhere (commands, the Import page, the API, the gate). Neither a
rubric's name nor its version may contain "@" (`rubric_part_problem`: the importer and the admin refuse it),
and `split_rubric_ref` splits at the LAST "@": a version never holds one, so a rubric named with an "@"
before the rule was enforced is still found ("team@a@2" is rubric "team@a", version "2").
"""

from __future__ import annotations

import unicodedata

from django.core.exceptions import ValidationError

_REFUSED_CATEGORIES = frozenset({"Cc", "Cf", "Cs", "Zl", "Zp", "Zs"})
# What people call the characters most often met; unicodedata has no names for control characters.
_CALLED = {
    "\t": "a tab",
    "\n": "a line break (line feed)",
    "\r": "a line break (carriage return)",
    "\x00": "a NUL character",
    "\u2028": "a line separator",
    "\u2029": "a paragraph separator",
    "\u00a0": "a no-break space",
    "\u200b": "a zero-width space",
}
RULE = "names must be one line of visible characters, with ordinary spaces only between words"
REF_EXAMPLE = "refund-support@1"
# What split_rubric_ref accepts, for request schemas (the API's OpenAPI schema refuses what it refuses).
RUBRIC_REF_PATTERN = r"^.+@[^@]+$"


class UnknownName(ValueError):
    """A name people typed that is malformed or matches nothing: the message says which (and, unless told
    not to, what does exist). The one exception every name lookup raises: commands, pages, the API and the
    gate all catch this type."""


def rubric_part_problem(value: str) -> str | None:
    """Why `value` cannot be a rubric's name or version beyond `name_problem` (it holds "@"), or None."""
    return 'must not contain "@" (rubrics are referred to as NAME@VERSION)' if "@" in value else None


def known_names(values, limit: int = 8) -> str:
    """What exists, for a message about a name that matched nothing: "known: a, b and 3 more"."""
    values = list(values)
    if not values:
        return "there are none yet"
    more = f" and {len(values) - limit} more" if len(values) > limit else ""
    return f"known: {', '.join(values[:limit])}{more}"


def split_rubric_ref(ref: str) -> tuple[str, str]:
    """'NAME@VERSION' -> (name, version), split at the last "@"; UnknownName saying how to write it otherwise."""
    name, sep, version = (ref or "").rpartition("@")
    if not sep or not name or not version:
        raise UnknownName(f"rubric must be written NAME@VERSION, e.g. {REF_EXAMPLE}, not {ref!r}")
    return name, version


def name_problem(value: str) -> str | None:
    """Why `value` cannot be a name (one sentence, naming the character and where it is), or None."""
    # Every refused character is one str.isprintable() calls unprintable (all of Cc, Cf, Cs, Zl, Zp and Zs
    # but the space; checked over every code point in tests/evals/test_names.py), so a printable name, almost every
    # name, skips the walk below: one pass in C instead of a category lookup per character.
    if value.isprintable():
        return f"must not start or end with spaces: {value!r}" if value != value.strip(" ") else None
    for position, char in enumerate(value, start=1):
        if char != " " and unicodedata.category(char) in _REFUSED_CATEGORIES:
            return f"contains {_called(char)} at character {position}: {RULE}"
    if value != value.strip(" "):
        return f"must not start or end with spaces: {value!r}"
    return None


def _called(char: str) -> str:
    code = f"U+{ord(char):04X}"
    if char in _CALLED:
        return f"{_CALLED[char]} ({code})"
    name = unicodedata.name(char, "")
    return f"the invisible character {code}" + (f" ({name})" if name else "")


def validate_name(value: str) -> None:
    """The model fields' validator: ValidationError with name_problem's message."""
    problem = name_problem(value)
    if problem:
        raise ValidationError(f"This name {problem}.", code="invalid_name")
