"""Once per process, before its first run: what a lane would otherwise pay at its first call.

Celery workers do this in the parent before forking (judging/tasks.py), so every pool process
inherits it; `run_judge --in-process` does it before it starts the run.
"""

from __future__ import annotations


def warm_up() -> None:
    # The SDKs take seconds of CPU to import (measured: ~16% of a 2,000-item run when a pool process
    # paid it at its first lane), and the lane module imports the backends.
    import anthropic
    import openai

    from . import lane  # noqa: F401 - imported for its side effect: loaded once, here
    from .backends import tls_context

    # Building a client imports the HTTP transport modules the SDKs load lazily, and the shared TLS
    # context reads the CA store (measured: a quarter of a second of a cold process's first lane).
    openai.OpenAI(api_key="warm-up", http_client=openai.DefaultHttpxClient(verify=tls_context())).close()
    anthropic.Anthropic(api_key="warm-up", http_client=anthropic.DefaultHttpxClient(verify=tls_context())).close()


def warm_up_limiter() -> None:
    """Open this process's connection to the Redis the limiter uses (and load its scripts), if it uses one."""
    import logging

    from django.conf import settings

    from .limiter import preload

    try:
        preload(settings.CELERY_BROKER_URL)
    except Exception:  # Redis is down: the first lane connects (or fails) as it would have  # noqa: BLE001
        logging.getLogger(__name__).warning("judging: could not reach Redis at process start", exc_info=True)
