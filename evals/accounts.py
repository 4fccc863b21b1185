"""Switching an account off or on ends its sessions, so reactivating an account never revives an old one.

Django's authentication refuses an inactive account at every request, but leaves its session in the
database: reactivated, the account would be signed in again on every browser it ever used (a laptop
left signed in when someone left the team). So when a saved user's `is_active` changes, in either
direction, every session of theirs is deleted. Django's database sessions keep the user's id inside the
signed session data, so the unexpired sessions are decoded to find theirs: a scan, on a rare event.
A password change already ends the other sessions (Django's session auth hash). They are deleted through the
session engine, never as rows only: with Redis the sessions are read from its cache first (cached_db,
config/settings.py), and a row deleted under a cached copy would leave the person signed in.
"""

from __future__ import annotations

from importlib import import_module

from django.conf import settings
from django.contrib.auth import SESSION_KEY
from django.contrib.sessions.models import Session
from django.utils import timezone


def end_sessions(user_id: int) -> int:
    """Delete every unexpired session signed in as `user_id`; how many there were."""
    mine = [
        session.pk
        for session in Session.objects.filter(expire_date__gt=timezone.now()).iterator()
        if session.get_decoded().get(SESSION_KEY) == str(user_id)
    ]
    store = import_module(settings.SESSION_ENGINE).SessionStore
    for session_key in mine:
        store().delete(session_key)  # the row, and the cached copy where the engine keeps one
    return len(mine)


def end_sessions_when_activity_changes(sender, instance, update_fields=None, **kwargs) -> None:
    """pre_save receiver for the user model (connected in apps.py)."""
    if instance.pk is None or (update_fields is not None and "is_active" not in update_fields):
        return  # a new account has no session; a save of other fields (e.g. last_login at login) changes nothing
    was_active = type(instance).objects.filter(pk=instance.pk).values_list("is_active", flat=True).first()
    if was_active is not None and was_active != instance.is_active:
        end_sessions(instance.pk)
