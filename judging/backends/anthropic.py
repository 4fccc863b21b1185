"""Anthropic Messages through the `anthropic` SDK, with structured output via a forced tool.

The judge must call the one tool `record_verdicts`, whose input schema is the verdict
schema; the tool's input is the answer. A text reply instead of the tool call is kept as
the raw output and parsed like any other answer (so it usually becomes ERROR), and
`stop_reason: "refusal"` is a refusal. The Messages API of the SDK version we pin has no
temperature parameter, so a judge config for this backend keeps temperature 0.

Nothing comes from the SDK's environment variables: the key is always passed (an explicit credential keeps
the SDK from ANTHROPIC_API_KEY, ANTHROPIC_AUTH_TOKEN, ANTHROPIC_PROFILE and federation), and so are the base
URL (never ANTHROPIC_BASE_URL) and the headers (ANTHROPIC_CUSTOM_HEADERS undone); redirects are not followed
(judging/backends/__init__.py says why).
"""

from __future__ import annotations

import json

import anthropic

from ..parse import clip
from ..prompt import JudgeRequest
from . import CallFailed, CallResult, headers_without_ambient, redact, status_failure, tls_context

# An empty base URL means the provider's own API; given explicitly, or the SDK would read ANTHROPIC_BASE_URL.
PROVIDER_URL = "https://api.anthropic.com"

TOOL_NAME = "record_verdicts"
TOOL_DESCRIPTION = (
    "Record your verdict for every criterion, in the order given. For each, write the evidence "
    "(a short verbatim quote from the transcript, or NONE) before the verdict."
)


class AnthropicBackend:
    def __init__(self, config, api_key: str):
        if not api_key:  # backend_for refuses such a config first; without a key the SDK reads the environment
            raise ValueError("the anthropic backend needs the key from the variable the config names")
        self.model_id = config.model_id
        self.max_output_tokens = config.max_output_tokens
        self.timeout_s = config.timeout_s
        self._secret = api_key
        headers = headers_without_ambient("ANTHROPIC_CUSTOM_HEADERS", f"Bearer {api_key}")
        self.client = anthropic.Anthropic(
            api_key=api_key,
            webhook_key="",
            base_url=config.base_url or PROVIDER_URL,
            # The SDK removes a header whose value is `omit` (its client merges headers with Omit), but its
            # signature says Mapping[str, str].
            default_headers={name: anthropic.omit if value is None else value for name, value in headers.items()},  # type: ignore[misc]
            timeout=config.timeout_s,
            max_retries=0,  # the runner retries, with the same rules for every backend
            # The SDK's own client (its timeouts and connection limits), minus redirects.
            http_client=anthropic.DefaultHttpxClient(verify=tls_context(), follow_redirects=False),
        )

    def call(self, request: JudgeRequest) -> CallResult:
        try:
            message = self.client.messages.create(
                model=self.model_id,
                max_tokens=self.max_output_tokens,
                system=request.system,
                messages=[{"role": "user", "content": request.user}],
                tools=[{"name": TOOL_NAME, "description": TOOL_DESCRIPTION, "input_schema": request.schema}],
                tool_choice={"type": "tool", "name": TOOL_NAME, "disable_parallel_tool_use": True},
            )
        except anthropic.APITimeoutError:
            raise CallFailed("timeout", f"no answer within {self.timeout_s:g} s", retryable=True) from None
        except anthropic.APIConnectionError as exc:
            raise CallFailed("connection", self._scrub(f"could not reach the judge: {exc}"), retryable=True) from None
        except anthropic.APIStatusError as exc:
            raise status_failure(exc.status_code, self._scrub(_message(exc)), exc.response.headers) from None
        except anthropic.APIResponseValidationError as exc:
            raise CallFailed("parse", self._scrub(f"the answer is not a message: {exc}"), retryable=False)
        usage = message.usage
        tokens_in = usage.input_tokens if usage else None
        tokens_out = usage.output_tokens if usage else None
        texts = [block.text for block in message.content if block.type == "text"]
        if message.stop_reason == "refusal":
            return CallResult(
                raw="\n".join(texts), refusal="\n".join(texts) or "refused", tokens_in=tokens_in, tokens_out=tokens_out
            )
        for block in message.content:
            if block.type == "tool_use" and block.name == TOOL_NAME:
                raw = json.dumps(block.input, ensure_ascii=False)
                return CallResult(raw=raw, tokens_in=tokens_in, tokens_out=tokens_out)
        return CallResult(raw="\n".join(texts), tokens_in=tokens_in, tokens_out=tokens_out)

    def _scrub(self, text: str) -> str:
        return clip(redact(text, self._secret), 500)


def _message(exc: anthropic.APIStatusError) -> str:
    body = exc.body
    if isinstance(body, dict):
        error = body.get("error", body)
        if isinstance(error, dict) and isinstance(error.get("message"), str):
            return error["message"]
    return exc.message
