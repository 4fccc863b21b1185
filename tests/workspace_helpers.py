"""Helpers of the workspace tests (issue 36): an answer about another workspace's object must be the same as
the answer about a missing one, byte for byte, once the per-render CSRF token is set aside."""

from __future__ import annotations

import re

# Django masks the CSRF token anew in every render: the one part of two identical pages that differs.
_CSRF = re.compile(rb'("X-CSRFToken": "|name="csrfmiddlewaretoken" value=")[^"]*"')


def unmasked(body: bytes) -> bytes:
    return _CSRF.sub(rb'\1"', body)


def same_answer(first, second) -> bool:
    """Two responses say the same: status, content type and body (CSRF tokens aside)."""
    return (
        first.status_code == second.status_code
        and first.get("Content-Type") == second.get("Content-Type")
        and unmasked(first.content) == unmasked(second.content)
    )
