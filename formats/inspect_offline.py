"""`inspect eval` without network: token counts estimated from words instead of tiktoken's encoding.

inspect_ai counts the input tokens of every model call; its models that have no tokenizer of their own, the
mock model `mockllm/model` among them, count with tiktoken's `o200k_base` encoding, which tiktoken downloads
on first use. On a machine without network (an air-gapped host, a locked-down CI) `inspect eval --model
mockllm/model` then stops at the first call with a ConnectionError and writes a log without samples.

`word_count_tokens()` replaces that count, for the time it is active, with the number of words (at least 1):
`count_text_tokens` is the method inspect_ai's ModelAPI documents for a provider to override. Only the
token counts in the log change; nothing Icewater imports from a log reads them. Providers with their own
counter (openai, anthropic, ...) keep it: they need the network for their calls anyway.
`python manage.py inspect_eval` runs Inspect's own `inspect eval` command inside it, and the tests write
their logs inside it too.
"""

from __future__ import annotations

import sys
from collections.abc import Iterator
from contextlib import contextmanager
from importlib.metadata import entry_points


async def count_words(self, text: str) -> int:
    """The token count of `text` as its number of words (at least 1): a stand-in that needs no encoding."""
    return max(1, len(text.split()))


@contextmanager
def word_count_tokens() -> Iterator[None]:
    from inspect_ai.model import ModelAPI

    original = ModelAPI.count_text_tokens
    ModelAPI.count_text_tokens = count_words  # type: ignore[method-assign]
    try:
        yield
    finally:
        ModelAPI.count_text_tokens = original  # type: ignore[method-assign]


def inspect_eval(args: list[str]) -> int:
    """Run `inspect eval ARGS` (Inspect's own command line, found by its `inspect` console script) with word
    counts for tokens; the exit status it ends with."""
    [script] = entry_points(group="console_scripts", name="inspect")
    main = script.load()
    argv = sys.argv
    sys.argv = ["inspect", "eval", *args]
    try:
        with word_count_tokens():
            main()
    except SystemExit as done:  # click ends every command with SystemExit
        return done.code if isinstance(done.code, int) else (0 if done.code is None else 1)
    finally:
        sys.argv = argv
    return 0
