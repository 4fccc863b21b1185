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


def test_the_transcript_markup_escapes_everything_but_the_marks_and_keeps_the_reference_unquotable():
    from types import SimpleNamespace

    from labeling.pages import transcript_html, transcript_parts

    output = SimpleNamespace(
        case=SimpleNamespace(input="Refund <b>order</b> 1234 & more", reference='Refund "$40" <now>'),
        tool_calls=[{"name": "lookup<x>", "args": {"id": 1}, "response": "ok"}],
        response="Refunded $40.",
    )
    html = str(transcript_html(transcript_parts(output, {"hl-a": "order"})))
    assert html == (
        '<div class="transcript-block" data-part="input">\n'
        "  <h3>Input</h3>\n"
        '  <pre class="quotable">Refund &lt;b&gt;<mark class="hl-a">order</mark>&lt;/b&gt; 1234 &amp; more</pre>\n'
        "</div>\n"
        '<div class="transcript-block tool" data-part="tool">\n'
        '  <h3>Tool call 1 · <span class="tool-name quotable">lookup&lt;x&gt;</span></h3>\n'
        '  <div class="tool-io">\n'
        '    <div><span class="io-label">Arguments</span><pre class="quotable">{&quot;id&quot;: 1}</pre></div>\n'
        '    <div><span class="io-label">Result</span><pre class="quotable">ok</pre></div>\n'
        "  </div>\n"
        "</div>\n"
        '<div class="transcript-block response" data-part="response">\n'
        "  <h3>Response</h3>\n"
        '  <pre class="quotable">Refunded $40.</pre>\n'
        "</div>\n"
        '<div class="transcript-block reference" data-part="reference">\n'
        '  <h3>Reference <span class="muted">· what a correct answer contains (not part of the transcript, '
        "not quotable)</span></h3>\n"
        "  <pre>Refund &quot;$40&quot; &lt;now&gt;</pre>\n"
        "</div>\n"
    )
    output.tool_calls, output.case.reference = [], ""
    html = str(transcript_html(transcript_parts(output)))
    assert '<p class="muted quote-hint">No tool calls.</p>' in html and 'data-part="reference"' not in html
