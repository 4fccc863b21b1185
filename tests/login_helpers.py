"""Signing in with a password through the test client, as the login page does."""

from __future__ import annotations

from django.http import HttpRequest


def password_login(client, username: str, password: str = "pw-for-tests-1") -> bool:
    """client.login with a request: django-axes (login throttling) refuses to judge an attempt without one.

    The address is the test client's own, so an attempt here counts where the client's requests do.
    """
    request = HttpRequest()
    request.META["REMOTE_ADDR"] = "127.0.0.1"
    return client.login(request=request, username=username, password=password)
