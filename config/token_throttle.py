"""A limit on failed token attempts per client address, for the JSON API (/api/) and the HTTP gate
(/calibration/api/): config/api_paths.py, which leaves out the gate page under /api/gates/.

Tokens are 256 random bits, so guessing one is hopeless; what the limit stops is a client hammering the
token check (each attempt is a database lookup) and a scanner learning anything from the answers' speed.
Every answer 401 (a missing, unknown or revoked token) counts against the client's address
(config/client_ip.py, the rule login throttling uses) in a fixed window of API_TOKEN_FAILURE_WINDOW
seconds; after API_TOKEN_FAILURE_LIMIT of them, every request from that address to those paths is
answered 429 with Retry-After (the seconds left in the window) without looking at its token, valid or
not. Calls with a valid token are never counted, so a CI job that authenticates keeps working however
often it calls. Counts live in Django's cache (docs/security.md says what that means per worker).
"""

from __future__ import annotations

import math
import time

from django.conf import settings
from django.core.cache import cache
from django.http import HttpRequest, HttpResponse, JsonResponse

from evals.problems import error_body

from .api_paths import is_json_api
from .client_ip import client_ip


def failed_token_throttle(get_response):
    def middleware(request: HttpRequest) -> HttpResponse:
        if not is_json_api(request.path):
            return get_response(request)
        window = settings.API_TOKEN_FAILURE_WINDOW
        now = time.time()
        window_start = int(now // window) * window
        key = f"icewater:token-failures:{client_ip(request) or 'unknown'}:{window_start}"
        if cache.get(key, 0) >= settings.API_TOKEN_FAILURE_LIMIT:
            return too_many(retry_after=max(1, math.ceil(window_start + window - now)))
        response = get_response(request)
        if response.status_code == 401:
            count_failure(key, timeout=window + 1)
        return response

    return middleware


def count_failure(key: str, *, timeout: int) -> None:
    cache.add(key, 0, timeout=timeout)
    try:
        cache.incr(key)
    except ValueError:  # the count expired between add and incr: this failure starts the next one
        cache.set(key, 1, timeout=timeout)


def too_many(*, retry_after: int) -> JsonResponse:
    message = (
        f"too many requests without a valid token from this address ({settings.API_TOKEN_FAILURE_LIMIT} in "
        f"{settings.API_TOKEN_FAILURE_WINDOW} seconds); try again in {retry_after} seconds with a valid token"
    )
    response = JsonResponse(error_body(message, retry_after=retry_after), status=429)
    response["Retry-After"] = str(retry_after)
    return response
