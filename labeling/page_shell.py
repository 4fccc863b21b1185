"""The labeling page of a freshly opened case, filled in from a shell rendered once per rubric version and person.

Why: Next hands out fresh cases, so nearly every labeling page is one with nothing saved yet, and
rendering it through the template engine cost several times what its queries do. Such a page
differs between two cases of one rubric version, for one person, only in a handful of values
(annotation_page.page_values: the annotation's id and URLs, the output's name, the eval set's name,
until when the case is held, the CSRF token, the transcript and any waiting messages). So the
template renders it once with a placeholder for each of those, and each request puts its values in.

Why it cannot mix people or cases up:
- The key holds what the shell shows of the rubric version (its id and content hash: a version in
  use cannot change) and of the person (id, username, role, superuser and staff flags: the top bar
  and the menu), so a renamed user or a changed role gets a new shell.
- Everything of a case is a placeholder; the context the shell is rendered from holds no annotation,
  output, label or token (it is built here, from placeholders and the rubric version only).
- Placeholders are "<icewater:...>" safe strings. Everything from data is autoescaped when rendered,
  so data can never print as a placeholder; the values put in are escaped here (the transcript and
  the messages come rendered, escaped, by their templates). The shell is kept split at its
  placeholders, so a value is never searched for placeholders itself.
- tests/test_labeling_page_shell.py checks the filled-in page is byte for byte the template's page.

The cache is the per-process "fragments" alias (settings.CACHES), like labeling.fragments.
"""

from __future__ import annotations

import hashlib
import re

from django.core.cache import caches
from django.http import HttpRequest
from django.template.loader import render_to_string
from django.utils.html import escape
from django.utils.safestring import mark_safe

from . import queue as q
from .annotate import CriterionState
from .fragments import CSRF_TOKEN, SAVE_URL, TIMEOUT_S, criterion_forms
from .models import Annotation, RubricVersion
from .pages import OUTCOMES


def _placeholder(name: str):
    return mark_safe(f"<icewater:{name}>")  # noqa: S308 - replaced in fill() before anyone sees it


# page_values key -> placeholder; the two fragments placeholders are the criterion forms' own.
PLACEHOLDERS = {
    "annotation_pk": _placeholder("annotation-pk"),
    "output_name": _placeholder("output-name"),
    "eval_set_name": _placeholder("eval-set-name"),
    "held_until": _placeholder("held-until"),
    "csrf_token": CSRF_TOKEN,
    "save_url": SAVE_URL,
    "submit_url": _placeholder("submit-url"),
    "transcript_html": _placeholder("transcript"),
    "messages_html": _placeholder("messages"),
}
# Rendered by their templates, escaped there; the other values are text and escaped in fill().
_HTML = {"transcript_html", "messages_html"}
_BY_TEXT = {str(p): key for key, p in PLACEHOLDERS.items()}
_PATTERN = re.compile(r"(<icewater:[a-z-]+>)")  # one group: split() keeps the placeholders

# Bumped when annotate.html or base.html change in a way a long-lived shared cache could serve stale
# (the per-process cache starts empty with every deploy anyway).
VERSION = 1


def fill(request: HttpRequest, annotation: Annotation, values: dict) -> str:
    """The page of fresh `annotation` for the requesting person: their cached shell with `values` put in."""
    cache = caches["fragments"]
    key = cache_key(annotation.rubric_version, request.user)
    parts = cache.get(key)
    if parts is None:
        parts = _split(_render(request, annotation.rubric_version))
        cache.set(key, parts, TIMEOUT_S)
    text = {name: values[name] if name in _HTML else escape(values[name]) for name in PLACEHOLDERS}
    # parts alternate: markup, a value's name, markup, ...; the values are never searched for placeholders.
    page = list(parts)
    page[1::2] = [text[name] for name in parts[1::2]]
    return "".join(page)


def _split(shell: str) -> tuple[str, ...]:
    """The shell as markup and value names, alternating (starting and ending with markup)."""
    pieces = _PATTERN.split(shell)
    pieces[1::2] = [_BY_TEXT[p] for p in pieces[1::2]]
    return tuple(pieces)


def cache_key(rubric_version: RubricVersion, user) -> str:
    # The person's part is hashed: usernames are free text as far as a cache key is concerned.
    person = repr((user.pk, user.username, user.role, user.is_superuser, user.is_staff)).encode()
    digest = hashlib.blake2b(person, digest_size=16).hexdigest()
    return f"labeling:page:v{VERSION}:{rubric_version.pk}:{rubric_version.content_hash}:{digest}"


def _render(request: HttpRequest, rubric_version: RubricVersion) -> str:
    """annotate.html for a fresh draft under `rubric_version`, every case value a placeholder."""
    states = [
        # Each criterion's cached unanswered form, with its own two placeholders left in.
        CriterionState(criterion=form, number=number, blank_html=form.blank_html)
        for number, form in enumerate(criterion_forms(rubric_version), start=1)
    ]
    context = {
        **PLACEHOLDERS,
        "annotation": {"pk": PLACEHOLDERS["annotation_pk"]},
        "eval_set": {"name": PLACEHOLDERS["eval_set_name"]},
        "rubric_version": rubric_version,
        "queue": None,
        "stale": False,
        "submitted": False,
        "correcting": False,
        "locked": False,
        "states": states,
        "states_by_key": {s.criterion.key: s for s in states},
        "answered": 0,
        "answered_pct": 0,
        "outcomes": OUTCOMES,
        "reservation_minutes": int(q.RESERVATION.total_seconds() // 60),
        "reservation_lapsed": False,
    }
    html = render_to_string("labeling/annotate.html", context, request)
    unknown = {p for p in _PATTERN.findall(html) if p not in _BY_TEXT}
    if unknown:  # a template printing a placeholder this module does not fill: a bug, not a page
        raise RuntimeError(f"labeling page shell has placeholders nobody fills: {sorted(unknown)}")
    return html
