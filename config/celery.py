"""The Celery application. Tasks live in each app's tasks.py and are found by autodiscovery.

Celery's Django fixup closes the database connections before and after every task, so each task
starts on a fresh one: a judge lane is one long task, and one connection per lane costs nothing
anyone notices.
"""

from __future__ import annotations

import os

from celery import Celery

from config.startup import exit_on_bad_settings

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
# `celery -A config worker` imports this module first; Celery reads the settings later, inside its option
# parsing, where a bad one becomes a 100-line traceback. Checked here it is one line and exit status 2.
exit_on_bad_settings()

app = Celery("icewater")
app.config_from_object("django.conf:settings", namespace="CELERY")
app.autodiscover_tasks()
