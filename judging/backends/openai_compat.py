"""OpenAI-compatible chat completions through the `openai` SDK and a base URL.

This covers OpenAI itself, Gemini's OpenAI-compatible endpoint, vLLM, Ollama, llama.cpp
server and most hosted models. The answer is requested as JSON-schema structured output
(`response_format={"type": "json_schema", ...}`); servers that ignore it still get the
schema spelled out in the prompt, and the parser checks the answer either way.

Nothing comes from the SDK's environment variables (OPENAI_API_KEY, OPENAI_ADMIN_KEY, OPENAI_ORG_ID,
OPENAI_PROJECT_ID, OPENAI_BASE_URL, OPENAI_CUSTOM_HEADERS, OPENAI_WEBHOOK_SECRET): each is passed explicitly,
and redirects are not followed (judging/backends/__init__.py says why).
"""

from __future__ import annotations

import json

import openai

from ..parse import clip
from ..prompt import SCHEMA_NAME, JudgeRequest
from . import CallFailed, CallResult, headers_without_ambient, redact, status_failure, tls_context

# Local servers (Ollama, llama.cpp, vLLM without --api-key) need no key, but the SDK insists on one.
NO_KEY_PLACEHOLDER = "no-key"
# An empty base URL means the provider's own API; given explicitly, or the SDK would read OPENAI_BASE_URL.
PROVIDER_URL = "https://api.openai.com/v1"


class OpenAIBackend:
    def __init__(self, config, api_key: str | None):
        self.model_id = config.model_id
        self.temperature = config.temperature
        self.max_output_tokens = config.max_output_tokens
        self.timeout_s = config.timeout_s
        self._secret = api_key
        key = api_key or NO_KEY_PLACEHOLDER
        headers = headers_without_ambient("OPENAI_CUSTOM_HEADERS", f"Bearer {key}")
        # An empty organization and project (never OPENAI_ORG_ID, OPENAI_PROJECT_ID), sent as no header at all.
        headers |= {"OpenAI-Organization": None, "OpenAI-Project": None}
        self.client = openai.OpenAI(
            api_key=key,
            admin_api_key="",
            organization="",
            project="",
            webhook_secret="",
            base_url=config.base_url or PROVIDER_URL,
            # The SDK removes a header whose value is `omit` (its client merges headers with Omit), but its
            # signature says Mapping[str, str].
            default_headers={name: openai.omit if value is None else value for name, value in headers.items()},  # type: ignore[misc]
            timeout=config.timeout_s,
            max_retries=0,  # the runner retries, with the same rules for every backend
            # The SDK's own client (its timeouts and connection limits), minus redirects.
            http_client=openai.DefaultHttpxClient(verify=tls_context(), follow_redirects=False),
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
            # The SDK's own create, read raw: chat_result checks the body itself, so a compatible server that
            # answers 200 with something that is not a chat completion becomes a clear parse failure.
            raw = self.client.chat.completions.with_raw_response.create(**self.body(request))
            body = raw.http_response.content
        except openai.APITimeoutError:
            raise CallFailed("timeout", f"no answer within {self.timeout_s:g} s", retryable=True) from None
        except openai.APIConnectionError as exc:
            raise CallFailed("connection", self._scrub(f"could not reach the judge: {exc}"), retryable=True) from None
        except openai.APIStatusError as exc:
            raise status_failure(exc.status_code, self._scrub(_message(exc)), exc.response.headers) from None
        try:
            return chat_result(body)
        except ValueError as exc:
            raise CallFailed("parse", self._scrub(f"the answer is not a chat completion: {exc}"), retryable=False)

    def _scrub(self, text: str) -> str:
        return clip(redact(text, self._secret), 500)


def _message(exc: openai.APIStatusError) -> str:
    body = exc.body
    if isinstance(body, dict):
        error = body.get("error", body)
        if isinstance(error, dict) and isinstance(error.get("message"), str):
            return error["message"]
    return exc.message


def chat_result(body: bytes) -> CallResult:
    """The judge's text, refusal and token counts from a chat completion's JSON body; ValueError if it is none."""
    completion = json.loads(body)  # json.JSONDecodeError is a ValueError
    if not isinstance(completion, dict) or not isinstance(completion.get("choices", []), list):
        raise ValueError("expected a JSON object with a list of choices")
    usage = completion.get("usage") or {}
    if not isinstance(usage, dict):
        raise ValueError("usage is not an object")
    tokens_in, tokens_out = _count(usage.get("prompt_tokens")), _count(usage.get("completion_tokens"))
    choices = completion.get("choices") or []
    if not choices:
        return CallResult(raw="", tokens_in=tokens_in, tokens_out=tokens_out)
    choice = choices[0]
    message = choice.get("message") if isinstance(choice, dict) else None
    if not isinstance(message, dict):
        raise ValueError("the first choice has no message object")
    content, refusal = message.get("content"), message.get("refusal")
    if not isinstance(content, str | None) or not isinstance(refusal, str | None):
        raise ValueError("the message's content and refusal must be text or null")
    if not refusal and choice.get("finish_reason") == "content_filter":
        refusal = "the provider's content filter stopped the answer"
    return CallResult(raw=content or "", refusal=refusal or None, tokens_in=tokens_in, tokens_out=tokens_out)


def _count(value: object) -> int | None:
    # Token counts as the provider reports them; anything that is not a whole number is not a count.
    return value if isinstance(value, int) and not isinstance(value, bool) else None
