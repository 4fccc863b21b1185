"""The WSGI application gunicorn serves (gunicorn.conf.py checks the settings first, in the master)."""

from __future__ import annotations

import os

from django.core.wsgi import get_wsgi_application
from django.urls import get_resolver

from config.chunked import ChunkedBodies
from config.startup import exit_on_bad_settings

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
exit_on_bad_settings()  # for a WSGI server other than gunicorn: one line and exit status 2, not a traceback
application = ChunkedBodies(get_wsgi_application())  # chunked request bodies read, not seen as empty

# Load the URLconf, and with it every view and what they import (pandas, scikit-learn, statsmodels), while the
# worker starts rather than in the first request a person makes (bench/pages.py's "cold" column).
get_resolver().url_patterns  # noqa: B018 - evaluated for its imports
