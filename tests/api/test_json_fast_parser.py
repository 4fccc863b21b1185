"""The fast JSON parser's guards (evals.record_fields.parse_json_bytes), at their edges.

orjson reads integers from -2**63 to 2**64 - 1 exactly and anything beyond as a float, and keeps the last of
a repeated key; the guards send such lines to the exact stdlib parser. The expected values are written out
here, not parsed: Python's int literals are the reference.
"""

from __future__ import annotations

import pytest

from evals.record_fields import MAX_NESTING, ShapeError, parse_json_bytes


@pytest.mark.parametrize(
    "number",
    [
        2**64,  # the first integer orjson reads as a float
        2**64 + 1,
        -(2**63) - 1,
        123456789012345678901234567890,
        -123456789012345678901234567890,
        10**400,  # beyond any float: orjson refuses it as infinity, the exact parser reads it
    ],
)
def test_integers_beyond_64_bits_keep_every_digit(number):
    value = parse_json_bytes(b'{"n": [%d]}' % number)
    assert value == {"n": [number]} and type(value["n"][0]) is int


@pytest.mark.parametrize("number", [2**64 - 1, -(2**63), 10**19, 1234567890123456789])
def test_integers_within_64_bits_are_read_exactly_by_the_fast_parser(number):
    value = parse_json_bytes(b"[%d]" % number)
    assert value == [number] and type(value[0]) is int


def test_a_float_is_still_a_float_and_text_with_e_plus_is_text():
    # Negative controls for the "e+" detour: both take the exact parser and come back unchanged.
    assert parse_json_bytes(b'{"x": 1.5e19, "s": "one+two e+ lines"}') == {"x": 1.5e19, "s": "one+two e+ lines"}
    assert type(parse_json_bytes(b"[1e16]")[0]) is float


def test_a_repeated_key_is_refused_even_where_an_escaped_colon_would_hide_it():
    with pytest.raises(ShapeError):
        parse_json_bytes(b'{"a": 1, "a": 2}')
    # The dropped pair's colon and the escaped one would even out the colon counts.
    with pytest.raises(ShapeError):
        parse_json_bytes(b'{"a": 1, "a": "x\\u003ay"}')
    # Negative control: an escaped colon without a repeated key is just a colon.
    assert parse_json_bytes(b'{"a": "x\\u003ay", "b": 2}') == {"a": "x:y", "b": 2}


def test_nesting_beyond_the_limit_is_refused_and_brackets_in_strings_do_not_count():
    deep = b"[" * (MAX_NESTING + 1) + b"]" * (MAX_NESTING + 1)
    with pytest.raises(ShapeError):
        parse_json_bytes(deep)
    at_limit = b"[" * MAX_NESTING + b"]" * MAX_NESTING
    assert parse_json_bytes(at_limit) is not None
    brackets_in_text = b'{"s": "' + b"[{" * 200 + b'"}'
    assert parse_json_bytes(brackets_in_text) == {"s": "[{" * 200}
