"""The fake LLM server itself: the behaviours the judging tests rely on, checked over plain HTTP."""

from __future__ import annotations

import json
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path

import pytest

from judging.prompt import CriterionSpec, GuidanceExample, Subject, build_request
from tests.fake_llm import BAD_QUOTE, FakeLLM

ROOT = Path(__file__).resolve().parents[2]


def post(url: str, body: dict, timeout: float = 5) -> tuple[int, dict, dict]:
    request = urllib.request.Request(url, data=json.dumps(body).encode(), headers={"Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(request, timeout=timeout) as response:
            return response.status, dict(response.headers), json.loads(response.read())
    except urllib.error.HTTPError as exc:
        return exc.code, dict(exc.headers), json.loads(exc.read())


def chat(response_text: str) -> dict:
    req = build_request(
        instruction="Grade.",
        criteria=[CriterionSpec("a", "A."), CriterionSpec("b", "B.")],
        subject=Subject("In", "Ref", [], response_text),
    )
    return {
        "model": "m",
        "messages": [{"role": "system", "content": req.system}, {"role": "user", "content": req.user}],
        "response_format": {"type": "json_schema", "json_schema": {"name": "v", "schema": req.schema}},
    }


@pytest.fixture
def fake():
    with FakeLLM() as server:
        yield server


def content(body: dict) -> str:
    return body["choices"][0]["message"]["content"]


def test_it_answers_every_criterion_of_the_schema_quoting_the_response(fake):
    status, _, body = post(f"{fake.openai_base_url}/chat/completions", chat("The refund is on its way today."))
    assert status == 200
    assert json.loads(content(body)) == {
        "criteria": [
            {"criterion": "a", "evidence": "The refund is on its way", "verdict": "PASS"},  # its first six words
            {"criterion": "b", "evidence": "The refund is on its way", "verdict": "PASS"},
        ]
    }
    assert body["usage"]["prompt_tokens"] > 0 and fake.calls == 1


def test_tokens_in_the_data_steer_each_answer(fake):
    url = f"{fake.openai_base_url}/chat/completions"
    items = json.loads(content(post(url, chat("x [[fake:b=FAIL]]"))[2]))["criteria"]
    assert [i["verdict"] for i in items] == ["PASS", "FAIL"]
    assert [i["criterion"] for i in json.loads(content(post(url, chat("x [[fake:missing]]"))[2]))["criteria"]] == ["a"]
    assert json.loads(content(post(url, chat("x [[fake:badquote]]"))[2]))["criteria"][0]["evidence"] == BAD_QUOTE
    with pytest.raises(json.JSONDecodeError):
        json.loads(content(post(url, chat("x [[fake:malformed]]"))[2]))
    refusal = post(url, chat("x [[fake:refusal]]"))[2]["choices"][0]["message"]
    assert refusal["content"] is None and refusal["refusal"]


def test_counted_failures_fail_the_first_attempts_of_that_request_only(fake):
    fake.retry_after = "2"
    url = f"{fake.openai_base_url}/chat/completions"
    first = post(url, chat("x [[fake:429x2]]"))
    assert first[0] == 429 and first[1]["Retry-After"] == "2"
    assert post(url, chat("x [[fake:429x2]]"))[0] == 429
    assert post(url, chat("x [[fake:429x2]]"))[0] == 200
    assert post(url, chat("other [[fake:429x2]]"))[0] == 429  # another request counts on its own
    assert post(url, chat("x [[fake:500]]"))[0] == 500


def test_force_applies_one_behaviour_to_every_request(fake):
    fake.force = "empty"
    assert content(post(f"{fake.openai_base_url}/chat/completions", chat("x [[fake:b=FAIL]]"))[2]) == ""


def test_it_speaks_anthropic_messages_through_the_forced_tool(fake):
    req = chat("Hello there.")
    body = {
        "model": "c",
        "max_tokens": 10,
        "system": req["messages"][0]["content"],
        "messages": [{"role": "user", "content": req["messages"][1]["content"]}],
        "tools": [{"name": "record_verdicts", "input_schema": req["response_format"]["json_schema"]["schema"]}],
    }
    status, _, answer = post(f"{fake.anthropic_base_url}/v1/messages", body)
    assert status == 200 and answer["stop_reason"] == "tool_use"
    assert answer["content"][0]["input"]["criteria"][1] == {
        "criterion": "b",
        "evidence": "Hello there.",
        "verdict": "PASS",
    }
    body["messages"][0]["content"] += " [[fake:refusal]]"
    assert post(f"{fake.anthropic_base_url}/v1/messages", body)[2]["stop_reason"] == "refusal"


def test_it_refuses_what_it_does_not_know(fake):
    assert post(f"{fake.openai_base_url}/embeddings", {})[0] == 404


@pytest.mark.subprocess
def test_standalone_it_prints_its_port_and_reports_its_call_count():
    process = subprocess.Popen(
        [sys.executable, "-m", "tests.fake_llm", "--latency", "0"], cwd=ROOT, stdout=subprocess.PIPE, text=True
    )
    try:
        port = int(process.stdout.readline())
        before = time.monotonic()
        post(f"http://127.0.0.1:{port}/v1/chat/completions", chat("Hi."))
        after = time.monotonic()
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/_stats", timeout=5) as response:
            stats = json.loads(response.read())
        assert (stats["calls"], stats["max_in_flight"]) == (1, 1)
        # The window's first request and last answer, on the clock every process on the machine shares.
        assert before <= stats["first_at"] <= stats["last_at"] <= after
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/_stats?reset=1", timeout=5) as response:
            json.loads(response.read())
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/_stats", timeout=5) as response:
            assert json.loads(response.read()) == {"calls": 1, "max_in_flight": 0, "first_at": None, "last_at": None}
    finally:
        process.terminate()
        process.wait(timeout=10)


def test_a_learning_judge_answers_an_examples_outcome_where_its_quote_is_in_the_response():
    example = GuidanceExample(input="", response="I refunded $45.00.", outcome="FAIL", quote="refunded $45.00")
    criteria = [CriterionSpec("a", "A.", examples=(example,)), CriterionSpec("b", "B.")]

    def ask(fake, response: str) -> list[str]:
        req = build_request(instruction="Grade.", criteria=criteria, subject=Subject("In", "Ref", [], response))
        body = {
            "model": "m",
            "messages": [{"role": "system", "content": req.system}, {"role": "user", "content": req.user}],
            "response_format": {"type": "json_schema", "json_schema": {"name": "v", "schema": req.schema}},
        }
        items = json.loads(content(post(f"{fake.openai_base_url}/chat/completions", body)[2]))["criteria"]
        return [i["verdict"] for i in items]

    with FakeLLM(learns=True) as fake:
        # The example's quote is in the response: its outcome wins over the token, for its criterion only.
        assert ask(fake, "Done: refunded  $45.00 today [[fake:a=PASS]]") == ["FAIL", "PASS"]
        # Negative control: a response that does not resemble the example is answered as the tokens say.
        assert ask(fake, "Done: refunded $40.00 today [[fake:a=PASS]]") == ["PASS", "PASS"]
    with FakeLLM() as fake:  # and a fake that does not learn ignores examples
        assert ask(fake, "Done: refunded $45.00 today [[fake:a=PASS]]") == ["PASS", "PASS"]
