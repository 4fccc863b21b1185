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
there) and the importers call `name_problem` for every record (labeling/io/fields.py `ident`), which the
upload page, the command line and the API's pushes all go through.
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


def name_problem(value: str) -> str | None:
    """Why `value` cannot be a name (one sentence, naming the character and where it is), or None."""
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
