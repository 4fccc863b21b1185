from __future__ import annotations

from labeling.transcript import Transcript, highlight

T = Transcript(
    input="My order 1234 was charged twice.",
    tool_calls=[{"name": "lookup_order", "args": {"order_id": "1234"}, "response": {"refundable": 40.0}}],
    response="I have refunded\n  $40.00 to your card.",
)


def test_a_quote_matches_whatever_the_whitespace():
    assert T.contains("refunded $40.00")
    assert T.contains("  charged   twice ")


def test_tool_arguments_and_results_are_quotable():
    assert T.contains('"refundable": 40.0')
    assert T.contains("lookup_order")


def test_none_is_an_explicit_no_quote_and_empty_is_not():
    assert T.contains("NONE")
    assert not T.contains("")
    assert not T.contains("   ")


def test_a_quote_that_is_not_there_is_refused():
    assert not T.contains("refunded $45.00")
    # A quote may not stitch the end of one part to the start of the next.
    assert not T.contains("twice. lookup_order")


def test_highlight_escapes_untrusted_text_and_marks_quotes():
    html = highlight("<script>x</script> refund of $40", {"hl-a": "refund of", "hl-b": "of $40"})
    assert "<script>" not in html
    assert "&lt;script&gt;" in html
    assert '<mark class="hl-a">refund </mark><mark class="hl-a hl-b">of</mark><mark class="hl-b"> $40</mark>' in html
