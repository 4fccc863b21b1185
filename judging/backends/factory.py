"""Which backend a judge config gets: its SDK's client, or one that refuses every call when the allowlists
forbid the config (judging/allowlist.py). Each SDK is imported only here, when a config uses it."""

from __future__ import annotations

from ..prompt import JudgeRequest
from . import CallFailed, CallResult, Misconfigured, ModelBackend, api_key_for, config_refusal


class RefusedBackend:
    """Stands in for a config the allowlists forbid: reads no key, sends nothing, and fails every call."""

    def __init__(self, config, reason: str):
        self.model_id = config.model_id
        self.reason = f"not sent: {reason}"

    def call(self, request: JudgeRequest) -> CallResult:
        raise CallFailed("rejected", self.reason, retryable=False)


def backend_for(config) -> ModelBackend:
    refusal = config_refusal(config)
    if refusal:
        return RefusedBackend(config, refusal)
    # Each SDK is imported only when a config uses it: the anthropic package alone takes seconds to import.
    if config.backend == "openai":
        from .openai_compat import OpenAIBackend

        return OpenAIBackend(config, api_key_for(config))
    if config.backend == "anthropic":
        from .anthropic import AnthropicBackend

        return AnthropicBackend(config, api_key_for(config) or "")
    raise Misconfigured(f"judge {config.name}: backend {config.backend!r} makes no model calls")
