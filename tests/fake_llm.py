"""A fake LLM server on loopback: the only fake in the test suite.

It speaks enough of two wire protocols for the real SDK clients:

- OpenAI-compatible chat completions: ``POST {base}/v1/chat/completions``
  (``response_format`` json_schema; answers in ``message.content``, a refusal in ``message.refusal``);
- Anthropic messages: ``POST {base}/v1/messages`` (answers through the forced tool's ``tool_use`` block,
  a refusal as ``stop_reason: "refusal"``).

It plays a judge: it reads the criterion keys from the JSON schema of the request and answers every one,
PASS by default, quoting the first words of the RESPONSE block as evidence. What it does can be steered
per request by tokens inside the graded data (so concurrent runs stay deterministic), or for every
request with ``server.force``:

    [[fake:malformed]]        truncated JSON
    [[fake:missing]]          leaves out the last criterion
    [[fake:unknown_verdict]]  answers "MAYBE" for the first criterion
    [[fake:extra]]            adds a criterion the rubric does not have
    [[fake:refusal]]          refuses to answer
    [[fake:empty]]            answers an empty string
    [[fake:prose]]            answers prose, not JSON (Anthropic: a text block instead of the tool call)
    [[fake:badquote]]         quotes text that is not in the transcript
    [[fake:401echo]]          refuses the key with a 401 whose message repeats it
    [[fake:nul]]              quotes text with a NUL character in it (which PostgreSQL text cannot hold)
    [[fake:429]] [[fake:500]] [[fake:slow]]           every attempt fails / is slower than any timeout
    [[fake:429x2]] [[fake:500x1]] [[fake:slowx1]]     the first N attempts of this request fail, then a valid answer
    [[fake:KEY=VERDICT]]      answer VERDICT for criterion KEY (KEY "all" for every criterion)

A judge that learns from examples: with ``server.learns`` set, an example in the prompt's judge guidance
(judging/prompt.render_guidance: "Example N, graded for KEY: the right verdict is OUTCOME" and its QUOTE block)
whose quote is in the RESPONSE being graded makes it answer OUTCOME for KEY, over any token: it answers right
on items that resemble an example, and as the tokens say otherwise (the workbench tests, issue 23).

A gullible judge: with ``server.gullible`` set to a text, every request whose prompt holds that text is
answered PASS on every criterion, whatever the tokens say (the probe tests give it the injection line).

An agent's model: a chat request with `tools` and no `response_format` is answered with a call of its first
tool (the last user message as `query`), and, once a tool result is the last message, with "Done: <result>".

It counts model calls (`calls`) so tests can assert that a cached re-run made none, and records each
request (path, headers, parsed body) when `record` is on. Run it standalone for benchmarks:
``python -m tests.fake_llm --latency 0.1`` prints the port and serves until killed.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import re
import sys
import threading
import time
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

TOKEN = re.compile(r"\[\[fake:([A-Za-z0-9_]+)(?:=([A-Za-z_]+))?\]\]")
RESPONSE_BLOCK = re.compile(r"<<<BEGIN RESPONSE>>>\n(.*?)\n<<<END RESPONSE>>>", re.S)
EXAMPLE_HEAD = re.compile(r"Example (\d+), graded for (\S+): the right verdict is (PASS|FAIL)")
BAD_QUOTE = "this sentence appears nowhere in the transcript"


@dataclass
class Recorded:
    path: str
    headers: dict[str, str]
    body: dict
    at: float


@dataclass
class FakeLLM:
    latency_s: float = 0.0
    slow_s: float = 3.0
    retry_after: str = "1"
    record: bool = True
    force: str | None = None
    gullible: str | None = None
    learns: bool = False
    host: str = "127.0.0.1"
    port: int = 0
    calls: int = 0
    in_flight: int = 0
    max_in_flight: int = 0
    # time.monotonic() (system-wide on Linux, so comparable across processes) of the window's first request
    # and last answer: a benchmark tells its start-up and tail from the time spent calling.
    first_at: float | None = None
    last_at: float | None = None
    requests: list[Recorded] = field(default_factory=list)
    _attempts: dict[str, int] = field(default_factory=dict)
    _lock: threading.Lock = field(default_factory=threading.Lock)
    _server: ThreadingHTTPServer | None = None
    _thread: threading.Thread | None = None

    # -- lifecycle -------------------------------------------------------------------------------
    def start(self) -> FakeLLM:
        fake = self

        class Handler(_Handler):
            server_state = fake

        server = _Server((self.host, self.port), Handler)
        self._server = server
        self.port = server.server_address[1]
        self._thread = threading.Thread(target=server.serve_forever, args=(0.05,), name="fake-llm", daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        if self._server is not None:
            self._server.shutdown()
            self._server.server_close()
            self._server = None

    def __enter__(self) -> FakeLLM:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    @property
    def openai_base_url(self) -> str:
        return f"http://{self.host}:{self.port}/v1"

    @property
    def anthropic_base_url(self) -> str:
        return f"http://{self.host}:{self.port}"

    def reset(self) -> None:
        with self._lock:
            self.calls = 0
            self.max_in_flight = 0
            self.requests.clear()
            self._attempts.clear()

    def _enter(self) -> None:
        with self._lock:
            if self.first_at is None:
                self.first_at = time.monotonic()
            self.in_flight += 1
            self.max_in_flight = max(self.max_in_flight, self.in_flight)

    def _leave(self) -> None:
        with self._lock:
            self.last_at = time.monotonic()
            self.in_flight -= 1

    # -- behaviour -------------------------------------------------------------------------------
    def _count(self, path: str, headers: dict[str, str], body: dict) -> int:
        """Count the call and return which attempt at this exact request it is (1 = first)."""
        fingerprint = hashlib.sha256(json.dumps(body.get("messages"), sort_keys=True).encode()).hexdigest()
        with self._lock:
            self.calls += 1
            if self.record:
                self.requests.append(Recorded(path, headers, body, time.monotonic()))
            self._attempts[fingerprint] = self._attempts.get(fingerprint, 0) + 1
            return self._attempts[fingerprint]

    def plan(self, text: str, attempt: int) -> tuple[str, dict[str, str]]:
        """(behaviour, verdict overrides) for a request whose prompt text is `text`."""
        behaviour = self.force or "valid"
        overrides: dict[str, str] = {}
        for name, value in TOKEN.findall(text):
            if value:
                overrides[name] = value.upper()
                continue
            match = re.fullmatch(r"(429|500|slow)x(\d+)", name)
            if match:
                behaviour = match.group(1) if attempt <= int(match.group(2)) else "valid"
            elif self.force is None:
                behaviour = name
        if self.gullible and self.gullible in text:
            return "valid", {"all": "PASS"}
        if self.learns:
            overrides.update(learned(text))
        return behaviour, overrides


def learned(text: str) -> dict[str, str]:
    """KEY -> OUTCOME of the prompt's guidance examples whose quote is in the graded RESPONSE (whitespace aside)."""
    response = RESPONSE_BLOCK.search(text)
    graded = " ".join((response.group(1) if response else "").split())
    found: dict[str, str] = {}
    for n, key, outcome in EXAMPLE_HEAD.findall(text):
        quote = re.search(rf"<<<BEGIN EXAMPLE {n} QUOTE>>>\n(.*?)\n<<<END EXAMPLE {n} QUOTE>>>", text, re.S)
        if quote and " ".join(quote.group(1).split()) and " ".join(quote.group(1).split()) in graded:
            found[key] = outcome
    return found


def answer_for(keys: list[str], text: str, behaviour: str, overrides: dict[str, str]) -> dict | str:
    """The judge's answer as a JSON-ready dict, or a string for answers that are not JSON."""
    response = RESPONSE_BLOCK.search(text)
    words = (response.group(1) if response else "").split()
    quote = " ".join(words[:6]) if words else "NONE"
    if behaviour == "badquote":
        quote = BAD_QUOTE
    if behaviour == "nul":
        quote = "refund\x00of"
    items = []
    for key in keys:
        verdict = overrides.get(key) or overrides.get("all") or "PASS"
        items.append({"criterion": key, "evidence": quote, "verdict": verdict})
    if behaviour == "missing" and items:
        items.pop()
    if behaviour == "unknown_verdict" and items:
        items[0]["verdict"] = "MAYBE"
    if behaviour == "extra":
        items.append({"criterion": "not_in_the_rubric", "evidence": "NONE", "verdict": "FAIL"})
    if behaviour == "malformed":
        return json.dumps({"criteria": items})[:25]
    if behaviour == "empty":
        return ""
    if behaviour == "prose":
        return "Overall the response looks fine to me. PASS."
    return {"criteria": items}


def _keys_from_schema(schema: dict) -> list[str]:
    try:
        return list(schema["properties"]["criteria"]["items"]["properties"]["criterion"]["enum"])
    except (KeyError, TypeError):
        return []


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    request_queue_size = 256  # a run opens many connections at once when it starts


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"  # keep-alive, as real providers do
    # Headers and body go out in two writes; without this, Nagle + delayed ACK add ~40 ms a reply.
    disable_nagle_algorithm = True
    server_state: FakeLLM

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - silence per-request logging
        pass

    def parse_request(self) -> bool:
        # The latency counts from here (the request line has just arrived), so the server's own parsing and
        # answering come out of L instead of adding to it: every answer leaves L after its request came in.
        self.arrived = time.monotonic()
        return super().parse_request()

    def do_GET(self) -> None:  # noqa: N802 - http.server naming
        """GET /_stats: counts for a benchmark that runs the server in another process (?reset=1 zeroes the peak)."""
        if self.path.split("?")[0] == "/_stats":
            fake = self.server_state
            stats = {
                "calls": fake.calls,
                "max_in_flight": fake.max_in_flight,
                "first_at": fake.first_at,
                "last_at": fake.last_at,
            }
            if self.path.endswith("?reset=1"):
                with fake._lock:
                    fake.max_in_flight = fake.in_flight
                    fake.first_at = fake.last_at = None
            return self._send(200, stats)
        return self._send(404, {"error": {"message": "no such page", "type": "not_found"}})

    def do_POST(self) -> None:  # noqa: N802 - http.server naming
        length = int(self.headers.get("Content-Length") or 0)
        try:
            body = json.loads(self.rfile.read(length) or b"{}")
        except json.JSONDecodeError:
            return self._send(400, {"error": {"message": "body is not JSON", "type": "invalid_request_error"}})
        fake = self.server_state
        path = self.path.split("?")[0]
        if not path.endswith(("/chat/completions", "/messages")):
            return self._send(404, {"error": {"message": f"no route {path}", "type": "not_found"}})
        headers = {k.lower(): v for k, v in self.headers.items()}
        attempt = fake._count(path, headers, body)
        fake._enter()
        try:
            reply = self._answer(fake, path, headers, body, attempt)
            status, payload, extra = reply
            data = json.dumps(payload).encode()
            if fake.latency_s:
                time.sleep(max(0.0, self.arrived + fake.latency_s - time.monotonic()))
        finally:
            # In flight until the answer starts going out: the client frees its slot only after reading it,
            # so a correct bound never shows more calls in flight here than it allows.
            fake._leave()
        self._send_bytes(status, data, extra)

    def _answer(self, fake: FakeLLM, path: str, headers: dict[str, str], body: dict, attempt: int) -> tuple:
        """(status, payload, headers) of the reply; the configured latency is waited out by the caller."""
        text = "\n".join(_texts(body))
        behaviour, overrides = fake.plan(text, attempt)
        if behaviour == "401echo":  # a careless provider that echoes the key it refused
            key = headers.get("x-api-key") or headers.get("authorization", "").removeprefix("Bearer ")
            error = {"message": f"Incorrect API key provided: {key}", "type": "authentication_error"}
            return 401, _error_body(path, error), None
        if behaviour == "429":
            error = {"message": "Rate limit reached", "type": "rate_limit_error"}
            return 429, _error_body(path, error), {"Retry-After": fake.retry_after}
        if behaviour == "500":
            return 500, _error_body(path, {"message": "The server had an error", "type": "api_error"}), None
        if behaviour == "slow":
            time.sleep(fake.slow_s)
        if path.endswith("/messages"):
            return 200, self._anthropic(body, text, behaviour, overrides), None
        if body.get("tools") and not body.get("response_format"):
            return 200, _agent_turn(body), None
        return 200, self._openai(body, text, behaviour, overrides), None

    def _openai(self, body: dict, text: str, behaviour: str, overrides: dict[str, str]) -> dict:
        schema = (body.get("response_format") or {}).get("json_schema", {}).get("schema", {})
        answer = answer_for(_keys_from_schema(schema), text, behaviour, overrides)
        content = answer if isinstance(answer, str) else json.dumps(answer)
        message: dict[str, Any] = {"role": "assistant", "content": content, "refusal": None}
        if behaviour == "refusal":
            message = {"role": "assistant", "content": None, "refusal": "I can't help with grading this."}
            content = message["refusal"]
        return {
            "id": "chatcmpl-fake",
            "object": "chat.completion",
            "created": int(time.time()),
            "model": body.get("model", ""),
            "choices": [{"index": 0, "message": message, "finish_reason": "stop", "logprobs": None}],
            "usage": _usage(body, content, "prompt_tokens", "completion_tokens"),
        }

    def _anthropic(self, body: dict, text: str, behaviour: str, overrides: dict[str, str]) -> dict:
        tools = body.get("tools") or [{}]
        answer = answer_for(_keys_from_schema(tools[0].get("input_schema", {})), text, behaviour, overrides)
        stop_reason = "tool_use"
        if behaviour == "refusal":
            blocks: list[dict] = [{"type": "text", "text": "I can't help with grading this."}]
            stop_reason = "refusal"
        elif isinstance(answer, str):
            blocks = [{"type": "text", "text": answer}]
            stop_reason = "end_turn"
        else:
            blocks = [{"type": "tool_use", "id": "toolu_fake", "name": tools[0].get("name", "tool"), "input": answer}]
        usage = _usage(body, json.dumps(blocks), "input_tokens", "output_tokens")
        return {
            "id": "msg_fake",
            "type": "message",
            "role": "assistant",
            "model": body.get("model", ""),
            "content": blocks,
            "stop_reason": stop_reason,
            "stop_sequence": None,
            "usage": usage,
        }

    def _send(self, status: int, payload: dict, headers: dict[str, str] | None = None) -> None:
        self._send_bytes(status, json.dumps(payload).encode(), headers)

    def _send_bytes(self, status: int, data: bytes, headers: dict[str, str] | None = None) -> None:
        try:
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            for name, value in (headers or {}).items():
                self.send_header(name, value)
            self.end_headers()
            self.wfile.write(data)
        except (BrokenPipeError, ConnectionResetError):
            pass  # the client gave up (a timeout test): nothing to answer


def _agent_turn(body: dict) -> dict:
    """An agent's model (a chat request with tools and no response format): it asks for the first tool with the
    last user message as `query`, and once a tool's result is the last message, answers with it."""
    messages = body.get("messages") or []
    last = messages[-1] if messages else {}
    message: dict[str, Any] = {"role": "assistant", "content": None, "refusal": None}
    finish = "tool_calls"
    if last.get("role") == "tool":
        message["content"] = f"Done: {last.get('content')}"
        finish = "stop"
    else:
        user = next((m.get("content") for m in reversed(messages) if m.get("role") == "user"), "")
        tool = body["tools"][0].get("function", {}).get("name", "tool")
        call = {
            "id": "call_fake_1",
            "type": "function",
            "function": {"name": tool, "arguments": json.dumps({"query": user})},
        }
        message["tool_calls"] = [call]
    return {
        "id": "chatcmpl-fake-agent",
        "object": "chat.completion",
        "created": int(time.time()),
        "model": body.get("model", ""),
        "choices": [{"index": 0, "message": message, "finish_reason": finish, "logprobs": None}],
        "usage": _usage(body, message["content"], "prompt_tokens", "completion_tokens"),
    }


def _texts(body: dict) -> list[str]:
    """Every piece of prompt text in an OpenAI or Anthropic request body."""
    out: list[str] = []
    system = body.get("system")
    if isinstance(system, str):
        out.append(system)
    for message in body.get("messages") or []:
        content = message.get("content")
        if isinstance(content, str):
            out.append(content)
        elif isinstance(content, list):
            out.extend(part.get("text", "") for part in content if isinstance(part, dict))
    return out


def _usage(body: dict, content: str | None, in_key: str, out_key: str) -> dict:
    # Deterministic stand-ins for token counts: about four characters a token.
    tokens_in = len(json.dumps(body.get("messages"))) // 4
    tokens_out = len(content or "") // 4
    usage = {in_key: tokens_in, out_key: tokens_out}
    if in_key == "prompt_tokens":
        usage["total_tokens"] = tokens_in + tokens_out
    return usage


def _error_body(path: str, error: dict) -> dict:
    if path.endswith("/messages"):
        return {"type": "error", "error": error}
    return {"error": error}


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description="Fake OpenAI/Anthropic-compatible judge on loopback.")
    parser.add_argument("--port", type=int, default=0)
    parser.add_argument("--latency", type=float, default=0.0, help="seconds before every answer")
    args = parser.parse_args(argv)
    fake = FakeLLM(latency_s=args.latency, port=args.port, record=False).start()
    print(fake.port, flush=True)
    try:
        while True:
            time.sleep(3600)
    except KeyboardInterrupt:
        fake.stop()


if __name__ == "__main__":
    sys.exit(main())
