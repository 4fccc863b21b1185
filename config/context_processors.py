"""What base.html shows on every page: the navigation built per role (each app's nav.py says which of its
pages a user may open) and the messages waiting for the request."""

from __future__ import annotations

from collections.abc import Iterable

from django.contrib.messages import get_messages
from django.http import HttpRequest
from django.utils.functional import lazy
from django.utils.html import format_html, format_html_join
from django.utils.safestring import SafeString, mark_safe

from calibration import nav as calibration_nav
from judging import nav as judging_nav
from labeling import nav as labeling_nav


def navigation(request: HttpRequest) -> dict:
    user = getattr(request, "user", None)
    if user is None or not user.is_authenticated:
        return {"nav_items": []}
    items = []
    for module in (labeling_nav, judging_nav, calibration_nav):
        items.extend(module.nav_items(user))
    return {"nav_items": items}


def messages(request: HttpRequest) -> dict:
    """`messages_html`: the messages waiting for this request, rendered only if a template prints them (and
    then gone, as Django's messages are once shown); a page's partial rendered for htmx leaves them waiting."""
    return {"messages_html": lazy(lambda: render_messages(get_messages(request)), SafeString)()}


def render_messages(waiting: Iterable) -> SafeString:
    """The list of messages as base.html shows it, "" when there is none.

    Built here rather than in the template: the labeling page prints it on nearly every case (after
    each submit), and the template engine took a measurable part of that page's time.
    """
    items = format_html_join("", '<li class="msg msg-{}">{}</li>', ((m.tags, m) for m in waiting))
    if not items:
        return mark_safe("")
    return format_html('\n    <ul class="messages" role="status">\n      {}\n    </ul>\n    ', items)
