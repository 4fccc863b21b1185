from __future__ import annotations

from evals.transcript import (
    MAX_MARKS_PER_QUOTE,
    PREVIEW_CHARS,
    PREVIEW_TOOL_CALLS,
    Transcript,
    find_quote,
    highlight,
    show,
)

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


def render_transcript(output, quotes=None, full=False) -> str:
    from django.template.loader import render_to_string

    from labeling.labeling_pages import transcript_parts

    context = {"transcript": transcript_parts(output, quotes, full=full), "full_url": "/page?full=1#transcript"}
    return render_to_string("labeling/_transcript.html", context)


def an_output(**parts):
    from types import SimpleNamespace

    case = SimpleNamespace(
        input=parts.get("input", "Refund <b>order</b> 1234 & more"),
        reference=parts.get("reference", 'Refund "$40" <now>'),
    )
    tool_calls = parts.get("tool_calls", [{"name": "lookup<x>", "args": {"id": 1}, "response": "ok"}])
    return SimpleNamespace(case=case, tool_calls=tool_calls, response=parts.get("response", "Refunded $40."))


def test_the_transcript_partial_escapes_everything_but_the_marks_and_keeps_the_reference_unquotable():
    html = render_transcript(an_output(), {"hl-a": "order"})
    assert (
        '<pre class="quotable">Refund &lt;b&gt;<mark class="hl-a">order</mark>&lt;/b&gt; 1234 &amp; more</pre>' in html
    )
    assert '<span class="tool-name quotable">lookup&lt;x&gt;</span>' in html
    assert '<pre class="quotable">{&quot;id&quot;: 1}</pre>' in html and '<pre class="quotable">ok</pre>' in html
    assert '<pre class="quotable">Refunded $40.</pre>' in html
    assert "<pre>Refund &quot;$40&quot; &lt;now&gt;</pre>" in html  # shown, but not quotable
    assert "<b>" not in html and "<now>" not in html and "<x>" not in html
    assert "Show all" not in html  # nothing was cut
    html = render_transcript(an_output(tool_calls=[], reference=""))
    assert '<p class="muted quote-hint">No tool calls.</p>' in html and 'data-part="reference"' not in html


def test_a_long_text_shows_its_beginning_and_a_show_all_link_and_all_of_it_when_asked():
    response = "<i>start</i> " + "x" * (PREVIEW_CHARS * 3) + " the end"
    cut = render_transcript(an_output(response=response), {"hl-a": "the end"})
    assert len(cut) < 2 * PREVIEW_CHARS
    assert "&lt;i&gt;start&lt;/i&gt;" in cut and "the end" not in cut
    assert (
        f"Showing the first {PREVIEW_CHARS:,} of {len(response):,} characters; a quote is marked further down." in cut
    )
    assert '<a href="/page?full=1#transcript">Show all</a>' in cut
    whole = render_transcript(an_output(response=response), {"hl-a": "the end"}, full=True)
    assert '<mark class="hl-a">the end</mark>' in whole and "Show all" not in whole and len(whole) > len(response)


def test_many_tool_calls_show_the_first_ones_and_say_how_many_more():
    calls = [{"name": f"call_{i}", "args": {}, "response": "ok"} for i in range(PREVIEW_TOOL_CALLS + 7)]
    html = render_transcript(an_output(tool_calls=calls))
    assert html.count('data-part="tool"') == PREVIEW_TOOL_CALLS
    assert "7 more tool calls not shown." in html
    assert render_transcript(an_output(tool_calls=calls), full=True).count('data-part="tool"') == len(calls)


def test_quotes_are_found_whatever_the_whitespace_at_most_so_many_times():
    text = "I have refunded\n  $40.00 to   your card. refunded $40.00"
    assert [text[s:e] for s, e in find_quote(text, "refunded $40.00")] == ["refunded\n  $40.00", "refunded $40.00"]
    assert [text[s:e] for s, e in find_quote(text, " to your  card. ")] == ["to   your card."]
    assert find_quote(text, "NONE") == [] and find_quote(text, "  ") == [] and find_quote(text, "$45") == []
    assert len(find_quote("ab " * 1000, "ab")) == MAX_MARKS_PER_QUOTE


def test_highlighting_a_multi_megabyte_text_that_repeats_the_quotes_beginning_finishes():
    # A regular expression with \\s+ between the words takes time proportional to the text times the quote's
    # words here (minutes); the search on the normalized text is linear. No timing assert: it just finishes.
    quote = "a " * 1500 + "b"
    text = "a  " * 1_000_000 + quote
    ((start, end),) = find_quote(text, quote)
    assert (start, end) == (3_000_000, len(text))
    shown = show(text, {"hl-a": quote}, limit=PREVIEW_CHARS)
    assert shown.cut and shown.quoted_further and "<mark" not in shown.html
