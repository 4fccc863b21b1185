"""Each criterion's form as it looks before anyone answered it, rendered once per rubric version.

Why: on the labeling page the six criterion forms are most of the markup, and rendering them through
the template engine cost several times what the page's queries do. A case is nearly always opened
unanswered (Next hands out a fresh case), and then every criterion's form is the same for every
annotator except for two values of the request: the annotation's save URL and the CSRF token.

What is cached, and why it cannot mix people up:
- The key is the rubric version's id and content hash. A rubric version in use cannot change
  (RubricVersion.save and Criterion.save refuse), and a different instrument has a different hash.
- The forms are rendered from the `criterion` partial itself (one source of markup) with a context
  that holds only the rubric version's criteria and two placeholders: no request, user, annotation or
  label is in it, so nothing of one person can end up in what another is shown.
- The placeholders are safe strings starting with "<". Anything that comes from data is autoescaped
  in the partial, so it can never render as a placeholder; they are replaced per request.

The cache is the "fragments" alias (settings.CACHES): per process, since what it holds never changes.
An answered, refused, locked or correcting criterion is rendered by the partial as before.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from django.core.cache import caches
from django.template.loader import render_to_string
from django.utils.html import escape
from django.utils.safestring import SafeString, mark_safe

from .models import Criterion, RubricVersion

SAVE_URL = mark_safe("<icewater:save-url>")  # noqa: S308 - a placeholder, replaced before anyone sees it
CSRF_TOKEN = mark_safe("<icewater:csrf-token>")  # noqa: S308 - same

# Bumped when the partial changes in a way a long-lived shared cache could serve stale (per-process
# caches start empty with every deploy anyway).
VERSION = 1
# A rubric version is looked at for hours by everyone labeling under it: keep it a working day.
TIMEOUT_S = 8 * 3600


@dataclass(frozen=True)
class CriterionForm:
    """One criterion of a rubric version: what the partial needs to render it, and its unanswered form."""

    pk: int
    key: str
    definition: str
    pass_example: str
    fail_example: str
    order: int
    blank_html: str  # the partial for an unanswered, unlocked criterion, with the two placeholders

    def render_blank(self, *, save_url: str, csrf_token: str) -> SafeString:
        html = self.blank_html.replace(SAVE_URL, escape(save_url)).replace(CSRF_TOKEN, escape(csrf_token))
        return mark_safe(html)  # noqa: S308 - rendered with autoescape; the two values escaped above


def cache_key(rubric_version_id: int, content_hash: str) -> str:
    return f"labeling:criteria:v{VERSION}:{rubric_version_id}:{content_hash}"


def criterion_forms(rubric_version: RubricVersion, *, label_criteria: Iterable[int] = ()) -> list[CriterionForm]:
    """The rubric version's criteria in page order, each with its unanswered form (cached; one query if not).

    `label_criteria`: the criterion ids of labels about to be shown with them. One that is not among
    the cached criteria means the entry outlived its criteria (they can only be replaced while the
    version is unused, e.g. in the admin): it is then read again rather than trusted.
    """
    cache = caches["fragments"]
    key = cache_key(rubric_version.pk, rubric_version.content_hash)
    forms = cache.get(key)
    if forms is None or not {form.pk for form in forms}.issuperset(label_criteria):
        criteria = Criterion.objects.filter(rubric_version_id=rubric_version.pk).order_by("order", "id")
        forms = [_render(rubric_version.pk, c, number) for number, c in enumerate(criteria, start=1)]
        cache.set(key, forms, TIMEOUT_S)
    return forms


def _render(rubric_version_id: int, criterion: Criterion, number: int) -> CriterionForm:
    # Imported here: annotate imports this module for CriterionState.
    from .annotate import CriterionState

    context = {
        "item": CriterionState(criterion=criterion, number=number),
        "rubric_version": {"pk": rubric_version_id},
        "save_url": SAVE_URL,
        "csrf_token": CSRF_TOKEN,
        "locked": False,
        "correcting": False,
    }
    return CriterionForm(
        pk=criterion.pk,
        key=criterion.key,
        definition=criterion.definition,
        pass_example=criterion.pass_example,
        fail_example=criterion.fail_example,
        order=criterion.order,
        blank_html=str(render_to_string("labeling/annotate.html#criterion", context)),
    )
