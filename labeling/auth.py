"""Authentication with the user read together with the session (labeling.sessions), Django's checks unchanged.

Django's get_user(request) reads the user id and backend from the session, asks the backend for the
user, and verifies the session's password hash. The backend here answers from the row the session
read already brought when it is the same user, and from the database otherwise; everything else is
Django's code: an inactive account is refused (ModelBackend.user_can_authenticate), a password change
ends other sessions (the hash check), a backend that is no longer configured signs the session out.
"""

from __future__ import annotations

import contextvars

from django.contrib import auth
from django.contrib.auth.backends import ModelBackend
from django.contrib.auth.middleware import AuthenticationMiddleware as DjangoAuthenticationMiddleware
from django.utils.functional import SimpleLazyObject

# The user the current request's session read brought, while Django's get_user asks the backend.
_preloaded = contextvars.ContextVar("icewater_preloaded_user", default=None)


class SessionUserBackend(ModelBackend):
    def get_user(self, user_id):
        user = _preloaded.get()
        if user is None or user.pk != user_id:
            return super().get_user(user_id)
        return user if self.user_can_authenticate(user) else None


def get_user(request):
    """Django's get_user, with the user the session read brought offered to the backend."""
    if not hasattr(request, "_cached_user"):
        session = request.session
        session.get(auth.SESSION_KEY)  # loads the session, and with it the user
        token = _preloaded.set(getattr(session, "preloaded_user", None))
        try:
            request._cached_user = auth.get_user(request)
        finally:
            _preloaded.reset(token)
    return request._cached_user


class AuthenticationMiddleware(DjangoAuthenticationMiddleware):
    def process_request(self, request):
        super().process_request(request)  # checks SessionMiddleware is installed; sets request.auser
        request.user = SimpleLazyObject(lambda: get_user(request))
