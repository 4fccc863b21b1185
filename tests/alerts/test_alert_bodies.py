"""What each destination receives (alerts/bodies.py), without a database."""

from __future__ import annotations

from alerts.bodies import email_subject, email_text, signature, signed_headers, slack_body, webhook_body
from alerts.messages import AlertMessage
from tests.alert_helpers import receiver_accepts

MESSAGE = AlertMessage(
    kind="watch-alarm",
    title="Pass rate below the minimum",
    text="The corrected pass rate fell to 0.71 < 0.80 since 2026-12-06 <b>&",
    url="https://icewater.example.com/watch/3/",
    facts=(("Criterion", "correct_amount"), ("Since", "2026-12-06 14:00")),
    dedupe_key="watch-3-alarm-1",
)


def test_the_signature_is_the_hmac_sha256_of_timestamp_dot_body():
    # Reference: printf '%s' '1765000000.{"kind":"test","title":"t"}' | openssl dgst -sha256 -hmac 'whsec-test-1'
    body = b'{"kind":"test","title":"t"}'
    expected = "v1=8e215c44235996cc3696c89a81ce0f1ba5ac7a11309722c375cc597dadaeea87"
    assert signature("whsec-test-1", 1765000000, body) == expected


def test_a_receiver_following_the_docs_accepts_the_headers_and_refuses_a_change():
    body = b'{"title":"x"}'
    headers = signed_headers("k-1", 1765000000, body, delivery=7)
    assert headers["X-Icewater-Delivery"] == "7"
    assert receiver_accepts("k-1", headers, body, now=1765000000 + 60)
    # Negative controls: another secret, another body, a timestamp outside the replay window, a moved timestamp.
    assert not receiver_accepts("k-2", headers, body, now=1765000000)
    assert not receiver_accepts("k-1", headers, b'{"title":"y"}', now=1765000000)
    assert not receiver_accepts("k-1", headers, body, now=1765000000 + 301)
    moved = {**headers, "X-Icewater-Timestamp": "1765000001"}
    assert not receiver_accepts("k-1", moved, body, now=1765000000)


def test_slack_gets_text_and_blocks_with_markup_escaped():
    body = slack_body(MESSAGE)
    assert body["text"].startswith("Pass rate below the minimum: The corrected pass rate")
    header, text, facts, link = body["blocks"]
    assert header == {"type": "header", "text": {"type": "plain_text", "text": "Pass rate below the minimum"}}
    assert text["text"]["text"] == "The corrected pass rate fell to 0.71 &lt; 0.80 since 2026-12-06 &lt;b&gt;&amp;"
    assert facts["fields"][0] == {"type": "mrkdwn", "text": "*Criterion*\ncorrect_amount"}
    assert link["text"]["text"] == "<https://icewater.example.com/watch/3/|Open in Icewater>"


def test_slack_shows_no_link_without_a_url_and_at_most_ten_facts():
    many = AlertMessage("test", "t", "x", "", tuple((f"f{i}", str(i)) for i in range(12)), "k")
    blocks = slack_body(many)["blocks"]
    assert len(blocks) == 3 and len(blocks[2]["fields"]) == 10


def test_the_generic_body_carries_the_message_and_where_it_comes_from():
    body = webhook_body(MESSAGE, delivery=12, workspace="refunds")
    assert body["kind"] == "watch-alarm" and body["dedupe_key"] == "watch-3-alarm-1"
    assert body["facts"] == [
        {"name": "Criterion", "value": "correct_amount"},
        {"name": "Since", "value": "2026-12-06 14:00"},
    ]
    assert (body["delivery"], body["workspace"]) == (12, "refunds")


def test_the_email_has_a_one_line_subject_and_the_facts_as_a_table():
    assert email_subject(AlertMessage("test", "two\nlines", "", "", (), "k")) == "[Icewater] two lines"
    text = email_text(MESSAGE)
    assert "Criterion  correct_amount\nSince      2026-12-06 14:00\n" in text
    assert text.endswith("https://icewater.example.com/watch/3/\n")


def test_a_message_survives_its_json():
    assert AlertMessage.from_json(MESSAGE.as_json()) == MESSAGE
