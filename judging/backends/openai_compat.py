"""OpenAI-compatible chat completions through the `openai` SDK and a base URL.

This covers OpenAI itself, Gemini's OpenAI-compatible endpoint, vLLM, Ollama, llama.cpp
server and most hosted models. The answer is requested as JSON-schema structured output
(`response_format={"type": "json_schema", ...}`); servers that ignore it still get the
schema spelled out in the prompt, and the parser checks the answer either way.
"""

from __future__ import annotations

import openai
import orjson
from openai.types.chat import ChatCompletion

from ..parse import clip
from ..prompt import SCHEMA_NAME, JudgeRequest
from . import CallFailed, CallResult, redact, status_failure, tls_context

# Local servers (Ollama, llama.cpp, vLLM without --api-key) need no key, but the SDK insists on one.
NO_KEY_PLACEHOLDER = "no-key"


class OpenAIBackend:
    def __init__(self, config, api_key: str | None):
        self.model_id = config.model_id
        self.temperature = config.temperature
        self.max_output_tokens = config.max_output_tokens
        self.timeout_s = config.timeout_s
        self._secret = api_key
        self.client = openai.OpenAI(
            api_key=api_key or NO_KEY_PLACEHOLDER,
            base_url=config.base_url or None,
            timeout=config.timeout_s,
            max_retries=0,  # the runner retries, with the same rules for every backend
            http_client=openai.DefaultHttpxClient(verify=tls_context()),
        )

    def body(self, request: JudgeRequest) -> dict:
        return {
            "model": self.model_id,
            "messages": [
                {"role": "system", "content": request.system},
                {"role": "user", "content": request.user},
            ],
            "temperature": self.temperature,
            # max_tokens, not max_completion_tokens: the one every compatible server understands.
            "max_tokens": self.max_output_tokens,
            "response_format": {
                "type": "json_schema",
                "json_schema": {"name": SCHEMA_NAME, "strict": True, "schema": request.schema},
            },
        }

    def call(self, request: JudgeRequest) -> CallResult:
        try:
            # The client's generic post (its documented way to call any endpoint) with the typed result:
            # chat.completions.create spends 2-3 ms of CPU per call re-walking our schema and messages
            # to transform parameters that are plain JSON already, and the standard json module takes
            # several times orjson's CPU to encode a prompt (measured; both cap a run's throughput).
            completion = self.client.post(
                "/chat/completions", content=orjson.dumps(self.body(request)), cast_to=ChatCompletion
            )
        except openai.APITimeoutError:
            raise CallFailed("timeout", f"no answer within {self.timeout_s:g} s", retryable=True) from None
        except openai.APIConnectionError as exc:
            raise CallFailed("connection", self._scrub(f"could not reach the judge: {exc}"), retryable=True) from None
        except openai.APIStatusError as exc:
            raise status_failure(exc.status_code, self._scrub(_message(exc)), exc.response.headers) from None
        except openai.APIResponseValidationError as exc:
            raise CallFailed("parse", self._scrub(f"the answer is not a chat completion: {exc}"), retryable=False)
        usage = completion.usage
        tokens_in = usage.prompt_tokens if usage else None
        tokens_out = usage.completion_tokens if usage else None
        if not completion.choices:
            return CallResult(raw="", tokens_in=tokens_in, tokens_out=tokens_out)
        choice = completion.choices[0]
        message = choice.message
        refusal = message.refusal
        if not refusal and choice.finish_reason == "content_filter":
            refusal = "the provider's content filter stopped the answer"
        return CallResult(raw=message.content or "", refusal=refusal, tokens_in=tokens_in, tokens_out=tokens_out)

    def _scrub(self, text: str) -> str:
        return clip(redact(text, self._secret), 500)


def _message(exc: openai.APIStatusError) -> str:
    body = exc.body
    if isinstance(body, dict):
        error = body.get("error", body)
        if isinstance(error, dict) and isinstance(error.get("message"), str):
            return error["message"]
    return exc.message


def warm_up() -> None:
    """Build the SDK's answer model once, as a first answer would (its validators are built lazily)."""
    ChatCompletion.construct(
        id="warm-up",
        object="chat.completion",
        created=0,
        model="warm-up",
        choices=[{"index": 0, "message": {"role": "assistant", "content": "{}"}, "finish_reason": "stop"}],
        usage={"prompt_tokens": 0, "completion_tokens": 0, "total_tokens": 0},
    )
