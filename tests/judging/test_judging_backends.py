"""The real openai and anthropic SDK clients against the fake server on loopback: one attempt per call,
failures classified for the runner's retry rules, the key read from the variable the config names."""

from __future__ import annotations

import http.server
import json
import threading
from datetime import UTC, datetime, timedelta
from email.utils import format_datetime

import pytest

from judging.backends import CallFailed, Misconfigured, api_key_for, retry_after_seconds
from judging.backends.anthropic import TOOL_NAME
from judging.backends.factory import backend_for
from judging.backends.openai_compat import chat_result
from judging.models import JudgeConfig
from judging.prompt import CriterionSpec, Subject, build_request
from tests.judging_helpers import KEY_ENV, KEY_VALUE

BACKENDS = ["openai", "anthropic"]
CRITERIA = [CriterionSpec("correct_amount", "Right amount."), CriterionSpec("next_step", "Says what is next.")]


def config(fake, backend: str, **fields) -> JudgeConfig:
    base_url = fake.openai_base_url if backend == "openai" else fake.anthropic_base_url
    values = {"model_id": "judge-2026", "api_key_env": KEY_ENV, "timeout_s": 2.0, "base_url": base_url} | fields
    return JudgeConfig(name="j", backend=backend, **values)


def req(response: str = "I refunded $40.00 today. Expect it within 5 days."):
    return build_request(instruction="Grade.", criteria=CRITERIA, subject=Subject("Refund?", "$40.00", [], response))


@pytest.mark.parametrize("backend", BACKENDS)
def test_a_valid_answer_comes_back_raw_with_token_counts(fake_llm, judge_key, backend):
    result = backend_for(config(fake_llm, backend)).call(req())
    answer = json.loads(result.raw)
    assert [c["criterion"] for c in answer["criteria"]] == ["correct_amount", "next_step"]
    assert answer["criteria"][0] == {
        "criterion": "correct_amount",
        "evidence": "I refunded $40.00 today. Expect it",
        "verdict": "PASS",
    }
    assert result.refusal is None
    assert result.tokens_in > 0 and result.tokens_out > 0
    assert fake_llm.calls == 1


def test_openai_asks_for_json_schema_output_with_the_prompt_as_system_and_user(fake_llm, judge_key):
    backend_for(config(fake_llm, "openai", temperature=0.0, max_output_tokens=321)).call(req())
    body = fake_llm.requests[0].body
    assert body["response_format"]["type"] == "json_schema"
    assert body["response_format"]["json_schema"]["strict"] is True
    assert body["response_format"]["json_schema"]["schema"] == req().schema
    assert [m["role"] for m in body["messages"]] == ["system", "user"]
    assert body["messages"][1]["content"] == req().user
    assert body["model"] == "judge-2026" and body["temperature"] == 0 and body["max_tokens"] == 321


def test_anthropic_forces_the_verdict_tool(fake_llm, judge_key):
    backend_for(config(fake_llm, "anthropic")).call(req())
    body = fake_llm.requests[0].body
    assert body["tool_choice"]["type"] == "tool" and body["tool_choice"]["name"] == TOOL_NAME
    assert body["tools"][0]["input_schema"] == req().schema
    assert body["system"] == req().system and body["messages"] == [{"role": "user", "content": req().user}]


@pytest.mark.parametrize("backend", BACKENDS)
def test_the_key_comes_from_the_named_variable(fake_llm, judge_key, backend):
    backend_for(config(fake_llm, backend)).call(req())
    headers = fake_llm.requests[0].headers
    assert KEY_VALUE in (headers.get("authorization", "") + headers.get("x-api-key", ""))


def test_a_missing_key_variable_is_a_misconfiguration_naming_the_variable(monkeypatch, fake_llm):
    monkeypatch.delenv(KEY_ENV, raising=False)
    with pytest.raises(Misconfigured, match=f"environment variable {KEY_ENV} .* is not set"):
        api_key_for(config(fake_llm, "openai"))


@pytest.mark.parametrize("backend", BACKENDS)
def test_a_refusal_is_reported_as_such(fake_llm, judge_key, backend):
    result = backend_for(config(fake_llm, backend)).call(req("[[fake:refusal]]"))
    assert result.refusal == "I can't help with grading this."


@pytest.mark.parametrize("backend", BACKENDS)
def test_429_is_retryable_and_carries_retry_after(fake_llm, judge_key, backend):
    fake_llm.retry_after = "7"
    with pytest.raises(CallFailed) as failure:
        backend_for(config(fake_llm, backend)).call(req("[[fake:429]]"))
    assert (failure.value.kind, failure.value.retryable, failure.value.retry_after) == ("rate_limit", True, 7.0)
    assert fake_llm.calls == 1  # the SDK's own retries are off: the runner decides


@pytest.mark.parametrize("backend", BACKENDS)
def test_500_is_retryable(fake_llm, judge_key, backend):
    with pytest.raises(CallFailed) as failure:
        backend_for(config(fake_llm, backend)).call(req("[[fake:500]]"))
    assert (failure.value.kind, failure.value.retryable) == ("server", True)
    assert "HTTP 500" in failure.value.reason
    assert fake_llm.calls == 1


@pytest.mark.parametrize("backend", BACKENDS)
def test_a_slow_reply_times_out(fake_llm, judge_key, backend):
    fake_llm.slow_s = 2.0
    with pytest.raises(CallFailed) as failure:
        backend_for(config(fake_llm, backend, timeout_s=0.3)).call(req("[[fake:slow]]"))
    assert (failure.value.kind, failure.value.retryable) == ("timeout", True)
    assert failure.value.reason == "no answer within 0.3 s"


@pytest.mark.parametrize("backend", BACKENDS)
def test_a_rejected_key_is_not_retried_and_is_not_echoed(fake_llm, judge_key, backend):
    with pytest.raises(CallFailed) as failure:
        backend_for(config(fake_llm, backend)).call(req("[[fake:401echo]]"))
    assert (failure.value.kind, failure.value.retryable) == ("rejected", False)
    assert "HTTP 401" in failure.value.reason
    assert KEY_VALUE not in failure.value.reason and "[redacted]" in failure.value.reason


def test_an_unreachable_endpoint_is_a_retryable_connection_failure(judge_key):
    cfg = JudgeConfig(
        name="j", backend="openai", model_id="m", api_key_env=KEY_ENV, timeout_s=1, base_url="http://127.0.0.1:9/v1"
    )
    with pytest.raises(CallFailed) as failure:
        backend_for(cfg).call(req())
    assert (failure.value.kind, failure.value.retryable) == ("connection", True)


def test_anthropic_prose_instead_of_the_tool_is_kept_as_the_raw_answer(fake_llm, judge_key):
    result = backend_for(config(fake_llm, "anthropic")).call(req("[[fake:prose]]"))
    assert result.raw == "Overall the response looks fine to me. PASS."


def test_retry_after_reads_seconds_milliseconds_and_dates():
    assert retry_after_seconds({"retry-after": "3"}) == 3.0
    assert retry_after_seconds({"retry-after": "1.5"}) == 1.5
    assert retry_after_seconds({"retry-after-ms": "250", "retry-after": "9"}) == 0.25
    now = datetime(2026, 1, 1, 12, 0, 0, tzinfo=UTC)
    date = format_datetime(now + timedelta(seconds=30), usegmt=True)
    assert retry_after_seconds({"retry-after": date}, now=now.timestamp()) == 30.0
    assert retry_after_seconds({"retry-after": "soon"}) is None
    assert retry_after_seconds({"retry-after": "-4"}) == 0.0
    assert retry_after_seconds({}) is None


class _NotAChatCompletion(http.server.BaseHTTPRequestHandler):
    """A server that answers every POST with 200 and a body that is no chat completion (a proxy's login page)."""

    body = b"<html>Please sign in</html>"

    def do_POST(self):  # noqa: N802 - http.server naming
        self.rfile.read(int(self.headers.get("Content-Length") or 0))
        self.send_response(200)
        self.send_header("Content-Type", "text/html")
        self.send_header("Content-Length", str(len(self.body)))
        self.end_headers()
        self.wfile.write(self.body)

    def log_message(self, *args):
        pass


def test_a_200_that_is_not_a_chat_completion_is_a_parse_failure_not_retried(judge_key):
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _NotAChatCompletion)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        cfg = JudgeConfig(
            name="j",
            backend="openai",
            model_id="m",
            api_key_env=KEY_ENV,
            timeout_s=2,
            base_url=f"http://127.0.0.1:{server.server_address[1]}/v1",
        )
        with pytest.raises(CallFailed) as failure:
            backend_for(cfg).call(req())
    finally:
        server.shutdown()
        server.server_close()
    assert (failure.value.kind, failure.value.retryable) == ("parse", False)
    assert failure.value.reason.startswith("the answer is not a chat completion")


@pytest.mark.parametrize(
    ("body", "expected"),
    [
        # A plain answer: text and the provider's token counts.
        (
            b'{"choices":[{"message":{"content":"{}","refusal":null},"finish_reason":"stop"}],'
            b'"usage":{"prompt_tokens":12,"completion_tokens":3}}',
            ("{}", None, 12, 3),
        ),
        # No choices at all: an empty answer (the parser makes it ERROR), counts kept.
        (b'{"choices":[],"usage":{"prompt_tokens":5,"completion_tokens":0}}', ("", None, 5, 0)),
        # A refusal, and the content filter stopping the answer, are refusals.
        (b'{"choices":[{"message":{"content":null,"refusal":"No."}}]}', ("", "No.", None, None)),
        (
            b'{"choices":[{"message":{"content":"partial"},"finish_reason":"content_filter"}]}',
            ("partial", "the provider's content filter stopped the answer", None, None),
        ),
        # Counts that are not whole numbers are not counts.
        (
            b'{"choices":[{"message":{"content":"x"}}],"usage":{"prompt_tokens":true,"completion_tokens":"7"}}',
            ("x", None, None, None),
        ),
    ],
)
def test_chat_result_reads_text_refusal_and_counts(body, expected):
    result = chat_result(body)
    assert (result.raw, result.refusal, result.tokens_in, result.tokens_out) == expected


@pytest.mark.parametrize(
    "body",
    [
        b"not json",
        b"[1, 2]",
        b'{"choices": "none"}',
        b'{"choices": [42]}',
        b'{"choices": [{"message": {"content": 42}}]}',
        b'{"choices": [{"message": {"content": "x"}}], "usage": "many"}',
    ],
)
def test_chat_result_refuses_what_is_not_a_chat_completion(body):
    with pytest.raises(ValueError):
        chat_result(body)
