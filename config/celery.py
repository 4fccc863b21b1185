"""The Celery application. Tasks live in each app's tasks.py and are found by autodiscovery.

Celery's Django fixup closes the database connections before and after every task, so each task
starts on a fresh one: a judge lane is one long task, and one connection per lane costs nothing
anyone notices.
"""

from __future__ import annotations

import os

from celery import Celery

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")

app = Celery("icewater")
app.config_from_object("django.conf:settings", namespace="CELERY")
app.autodiscover_tasks()
