"""Chunked request bodies (Transfer-Encoding: chunked, no Content-Length), handed to Django with their length.

Django reads a body only as far as its Content-Length says, so a chunked body (what HTTP clients send when they
stream a file) read as empty: a push was refused as "no records". gunicorn decodes the chunks and ends its input
where the body ends (it sets `wsgi.input_terminated`, the WSGI extension it shares with mod_wsgi); this reads such
a body into a spooled file (in memory up to FILE_UPLOAD_MAX_MEMORY_SIZE, then on disk) and hands it on with its
length, so every view sees it as if it had been sent with a Content-Length. It reads at most the largest body
Icewater takes anywhere (an upload: ICEWATER_UPLOAD_MAX_BYTES for the file plus DATA_UPLOAD_MAX_MEMORY_SIZE for
the rest) and one byte more, so a longer body is refused by the view's own limit (413) without being read whole.
A server that does not decode chunks (manage.py runserver) gets 411 Length Required: send a Content-Length.
"""

from __future__ import annotations

import json
import tempfile

from django.conf import settings

LENGTH_REQUIRED = "this server cannot read a chunked body; send the body with a Content-Length header"
_BLOCK = 64 * 1024


def max_chunked_bytes() -> int:
    return settings.ICEWATER_UPLOAD_MAX_BYTES + settings.DATA_UPLOAD_MAX_MEMORY_SIZE


class ChunkedBodies:
    """WSGI middleware around Django's application; every other request passes through untouched."""

    def __init__(self, application) -> None:
        self.application = application

    def __call__(self, environ: dict, start_response):
        chunked = "chunked" in environ.get("HTTP_TRANSFER_ENCODING", "").lower()
        if not chunked or environ.get("CONTENT_LENGTH"):
            return self.application(environ, start_response)
        if not environ.get("wsgi.input_terminated"):
            body = json.dumps({"error": LENGTH_REQUIRED, "problems": []}).encode()  # the API's error shape
            headers = [("Content-Type", "application/json"), ("Content-Length", str(len(body)))]
            start_response("411 Length Required", headers)
            return [body]
        spooled = tempfile.SpooledTemporaryFile(max_size=settings.FILE_UPLOAD_MAX_MEMORY_SIZE)  # noqa: SIM115
        remaining = max_chunked_bytes() + 1
        while remaining > 0:
            block = environ["wsgi.input"].read(min(_BLOCK, remaining))
            if not block:
                break
            spooled.write(block)
            remaining -= len(block)
        length = spooled.tell()
        spooled.seek(0)
        environ = {**environ, "CONTENT_LENGTH": str(length), "wsgi.input": spooled}
        try:
            return self.application(environ, start_response)
        finally:
            # Django has read what it needed by the time it returns its response; the file goes with the request.
            spooled.close()
