"""Judge backends: something that takes a JudgeRequest and returns what the judge answered.

A model backend makes exactly one attempt per `call` (the SDK's own retries are off):
the runner owns retries, backoff, Retry-After and the concurrency bound, so the rules
are the same for every backend. A failed attempt raises CallFailed, saying whether
trying again can help. The API key is read from the environment variable the judge
config names, at the moment the backend is built, and is never stored or logged;
`redact` scrubs it from any text that might echo it. Only a variable and a base URL host the
operator allows (judging/allowlist.py) are ever used: a config that breaks the rule, stored before
it or after the operator narrowed a list, gets a backend that sends nothing and answers every call
with a non-retryable failure, so its items become ERROR saying why.

The SDKs would otherwise fill gaps from the process environment (another key, an organization or
project, a base URL, extra headers): the backends pass every such value explicitly, so a request
carries only the allowlisted key to the base URL's host. They follow no redirect either: a redirect
would re-send the prompt and the key to a host nobody allowed, so it fails the call, saying where it
pointed.
"""

from __future__ import annotations

import email.utils
import functools
import os
import ssl
import time
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Protocol
from urllib.parse import urlsplit

from django.conf import settings

from ..allowlist import base_url_refusal, key_var_refusal
from ..prompt import JudgeRequest


class Misconfigured(Exception):
    """The run cannot start as configured (unknown names, a missing API key variable, ...)."""


@dataclass(frozen=True)
class CallResult:
    raw: str  # what the judge answered: the message text, or the forced tool's input as JSON
    refusal: str | None = None
    tokens_in: int | None = None
    tokens_out: int | None = None


class CallFailed(Exception):
    def __init__(self, kind: str, reason: str, *, retryable: bool, retry_after: float | None = None):
        super().__init__(reason)
        self.kind = kind
        self.reason = reason
        self.retryable = retryable
        self.retry_after = retry_after


class ModelBackend(Protocol):
    model_id: str

    def call(self, request: JudgeRequest) -> CallResult: ...


def key_needed_refusal(config) -> str | None:
    """Why this config cannot call without a key variable (None: it names one, or its server needs none).

    Anthropic always needs a key, and so does the provider's own OpenAI API (an empty base URL); a local
    OpenAI-compatible server (Ollama, llama.cpp, vLLM) needs none. With no key given, an SDK looks for
    credentials in the environment (ANTHROPIC_AUTH_TOKEN, OPENAI_API_KEY, ...), which no operator allowed."""
    if config.api_key_env or config.backend not in ("openai", "anthropic"):
        return None
    if config.backend == "anthropic":
        return (
            f"judge {config.name}: the anthropic backend needs api_key_env, the name of the variable holding "
            "its key (e.g. ANTHROPIC_API_KEY); without one nothing is sent"
        )
    if not config.base_url:
        return (
            f"judge {config.name}: the provider's own API needs api_key_env, the name of the variable holding "
            "its key (e.g. OPENAI_API_KEY); only a local server at a base_url needs none"
        )
    return None


def config_refusal(config) -> str | None:
    """Why the operator's allowlists forbid this config's key variable or base URL, or why it cannot call
    without a key variable (None: it may call)."""
    problem = key_needed_refusal(config)
    if problem:
        return problem
    if config.api_key_env:
        problem = key_var_refusal(config.api_key_env, settings.JUDGE_KEY_VARS)
        if problem:
            return f"judge {config.name}: api_key_env {problem}"
    problem = base_url_refusal(config.base_url, settings.JUDGE_BASE_URL_HOSTS)
    if problem:
        return f"judge {config.name}: base_url {problem}"
    return None


def api_key_for(config) -> str | None:
    """The key from the variable the config names; Misconfigured (naming the variable, never a value) if the
    operator does not allow that variable or it is unset."""
    if not config.api_key_env:
        return None
    problem = key_var_refusal(config.api_key_env, settings.JUDGE_KEY_VARS)
    if problem:
        raise Misconfigured(f"judge {config.name}: api_key_env {problem}")
    key = os.environ.get(config.api_key_env, "")
    if not key:
        raise Misconfigured(
            f"judge {config.name}: the environment variable {config.api_key_env} that should hold its API key "
            "is not set (set it where the run executes: this shell for --in-process, the Celery workers otherwise)"
        )
    return key


@functools.cache
def tls_context() -> ssl.SSLContext:
    """The TLS context every judge client of this process shares: the system's CAs (SSL_CERT_FILE and
    SSL_CERT_DIR honored), as the SDKs' own default. Building one reads the whole CA store, so it is built
    once per process rather than once per client."""
    return ssl.create_default_context()


def headers_without_ambient(variable: str, authorization: str) -> dict[str, str | None]:
    """Default headers for an SDK client that undo the extra headers its `variable` (OPENAI_CUSTOM_HEADERS,
    ANTHROPIC_CUSTOM_HEADERS: one "Name: value" a line) would add, and set the Authorization header to the
    allowlisted key's. A header named here with None is left out of every request (the SDKs' `Omit`)."""
    names = [line.partition(":")[0].strip() for line in os.environ.get(variable, "").split("\n") if ":" in line]
    headers: dict[str, str | None] = {name: None for name in names if name}
    headers = {name: value for name, value in headers.items() if name.lower() != "authorization"}
    return headers | {"Authorization": authorization}


def redact(text: str, secret: str | None) -> str:
    if secret and secret in text:
        return text.replace(secret, "[redacted]")
    return text


def retry_after_seconds(headers: Mapping[str, str] | None, now: float | None = None) -> float | None:
    """Seconds to wait from `retry-after-ms` or `Retry-After` (seconds or an HTTP date); None if absent or bad."""
    if not headers:
        return None
    millis = headers.get("retry-after-ms")
    if millis:
        try:
            return max(0.0, float(millis) / 1000)
        except ValueError:
            pass
    value = headers.get("retry-after")
    if not value:
        return None
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    return max(0.0, when.timestamp() - (time.time() if now is None else now))


def status_failure(status: int, message: str, headers: Mapping[str, str] | None) -> CallFailed:
    """Classify an HTTP error answer: 429 and 5xx (and 408/409) are worth retrying, other 4xx are not, nor is a
    redirect (which the clients never follow)."""
    if 300 <= status < 400:
        return CallFailed("rejected", redirect_reason(status, (headers or {}).get("location", "")), retryable=False)
    if status == 429:
        return CallFailed(
            "rate_limit", f"HTTP 429 rate limited: {message}", retryable=True, retry_after=retry_after_seconds(headers)
        )
    if status >= 500 or status in (408, 409):
        return CallFailed(
            "server", f"HTTP {status}: {message}", retryable=True, retry_after=retry_after_seconds(headers)
        )
    return CallFailed("rejected", f"HTTP {status}: {message}", retryable=False)


def redirect_reason(status: int, location: str) -> str:
    """Why a redirect answer is an ERROR: where it pointed (its host, never the whole address) and what to do."""
    try:
        parts = urlsplit(location.strip())
        where = parts.netloc.rpartition("@")[2].lower() if parts.netloc else ""
    except ValueError:
        where = ""
    target = f"a redirect to {where[:100]}" if where else "a redirect"
    return (
        f"the judge answered HTTP {status}, {target}; redirects are not followed, so the prompt and the key go "
        "only to base_url's host: if the provider moved, set base_url to the new address (its host must be "
        "one ICEWATER_JUDGE_BASE_URL_HOSTS allows)"
    )
