"""Logging filters, read by LOGGING while Django starts (so nothing here imports Django's apps)."""

from __future__ import annotations

import logging


class QuietRefusals(logging.Filter):
    """On django.request: a 4xx answer (a refusal the app expects: 403 "Not allowed", 404, 400) is logged as
    its one line, without the traceback Django attaches to a PermissionDenied; 5xx records pass untouched,
    traceback included."""

    def filter(self, record: logging.LogRecord) -> bool:
        if getattr(record, "status_code", 500) < 500:
            record.exc_info = None
            record.exc_text = None
        return True
