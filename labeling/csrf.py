"""The labeling page's CSRF token: Django's get_token, with the mask drawn in one read of the OS random source.

Django masks the CSRF secret (against BREACH) with 32 characters it draws one at a time through
secrets.choice, each a read of the OS random source, then ciphers the secret character by character:
~0.4 ms of the labeling page's CPU, the page every annotator opens for every case (measured). Here
the 32 characters come from one read, by rejection sampling (a byte below 248 = 4 x 62 maps onto
the 62 characters uniformly; the rest are dropped). Everything else is Django's: the alphabet and
the cipher (django.middleware.csrf unmasks these tokens like its own), and the request flag that
makes CsrfViewMiddleware renew the cookie. A request without a valid secret yet goes to get_token
itself, which makes one. tests/test_labeling_csrf.py checks the middleware accepts the tokens and
that the mask's characters are uniform (with a biased draw as the negative control).
"""

from __future__ import annotations

import secrets

from django.http import HttpRequest
from django.middleware.csrf import CSRF_ALLOWED_CHARS, CSRF_SECRET_LENGTH, get_token

_INDEX = {char: i for i, char in enumerate(CSRF_ALLOWED_CHARS)}
_N = len(CSRF_ALLOWED_CHARS)
_LIMIT = 256 - 256 % _N  # bytes below this map onto the alphabet uniformly (248 for 62 characters)


def page_token(request: HttpRequest) -> str:
    """A masked CSRF token for `request`, as get_token(request) returns one."""
    secret = request.META.get("CSRF_COOKIE")  # set by CsrfViewMiddleware, from a valid cookie only
    if secret is None:
        return get_token(request)
    # As get_token does: the cookie is in use, so the middleware sends it again to renew its expiry.
    request.META["CSRF_COOKIE_NEEDS_UPDATE"] = True
    mask = random_chars(CSRF_SECRET_LENGTH)
    return mask + "".join(CSRF_ALLOWED_CHARS[(_INDEX[s] + _INDEX[m]) % _N] for s, m in zip(secret, mask, strict=True))


def random_chars(n: int, draw=secrets.token_bytes) -> str:
    """`n` characters of the CSRF alphabet, each uniformly at random (`draw`: the random source, for tests)."""
    chars: list[str] = []
    while len(chars) < n:
        chars += [CSRF_ALLOWED_CHARS[b % _N] for b in draw(n + n // 2) if b < _LIMIT]
    return "".join(chars[:n])
