"""A bad or missing setting stops every entry point with one line, not a traceback.

config/settings.py raises ImproperlyConfigured with a message that says what to set; left alone, Django,
gunicorn and Celery print it at the end of a 30-55 line traceback. manage.py, gunicorn.conf.py,
config/wsgi.py and config/celery.py call exit_on_bad_settings() before anything else: it imports the
settings module (what Django's LazySettings would do at first use) and turns that one exception into
`icewater: <message>` on stderr and exit status 2. Every other error keeps its traceback: it is a bug,
not a setting.
"""

from __future__ import annotations

import importlib
import os
import sys

from django.core.exceptions import ImproperlyConfigured

# The status of a usage error (argparse and Django's command parser exit 2 on bad arguments), so a
# supervisor or script can tell "fix the environment" from a crash (1).
EXIT_BAD_SETTING = 2


def exit_on_bad_settings() -> None:
    """Import the settings module once; on ImproperlyConfigured print one line and exit 2.

    Idempotent: after the first call the module is already imported and this costs nothing, so each
    entry point can call it whichever of them happens to import first.
    """
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
    try:
        importlib.import_module(os.environ["DJANGO_SETTINGS_MODULE"])
    except ImproperlyConfigured as exc:
        message = " ".join(str(exc).split())  # one line, whatever the message held
        print(f"icewater: {message}", file=sys.stderr, flush=True)
        raise SystemExit(EXIT_BAD_SETTING) from None
