"""The Celery application. Tasks live in each app's tasks.py and are found by autodiscovery."""

from __future__ import annotations

import os

from celery import Celery
from celery.signals import task_postrun, task_prerun

from config.startup import exit_on_bad_settings

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
# `celery -A config worker` imports this module first; Celery reads the settings later, inside its option
# parsing, where a bad one becomes a 100-line traceback. Checked here it is one line and exit status 2.
exit_on_bad_settings()

app = Celery("icewater")
app.config_from_object("django.conf:settings", namespace="CELERY")
app.autodiscover_tasks()


@task_prerun.connect
@task_postrun.connect
def _close_old_connections(**kwargs) -> None:
    # What Django does at the start and end of a request: drop connections that are broken or older than
    # CONN_MAX_AGE, keep the rest (see CELERY_DB_REUSE_MAX in settings).
    from django.db import close_old_connections

    close_old_connections()
