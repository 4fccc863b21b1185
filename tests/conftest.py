"""Every fixture the tests share, defined once; browser fixtures are in tests/browser/conftest.py.

Builders that write model rows are plain functions in factories.py, other helpers (pages, runs, files) in the
*_helpers.py modules; both are imported like any function. A test takes a fixture only by naming it as an argument.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from django.core.cache import cache

from evals.models import Role

from .factories import make_user
from .fake_llm import FakeLLM
from .inspect_helpers import REFUND_SAMPLES, go_offline, write_log
from .judging_helpers import KEY_ENV, KEY_VALUE
from .two_workspaces import build_side


def pytest_configure(config):
    # Parallel workers sharing one data folder and queue would disturb each other's tests (tests/xdist_isolation.py).
    if os.environ.get("PYTEST_XDIST_WORKER") and not config.pluginmanager.has_plugin("tests.xdist_isolation"):
        raise pytest.UsageError("parallel runs need `-p tests.xdist_isolation` (make test-fast passes it)")


@pytest.fixture(autouse=True)
def fast_password_hashing(settings):
    """PBKDF2 costs about a second per test user on this machine; the hasher is not what tests check."""
    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]


@pytest.fixture(autouse=True)
def judge_test_key_allowed(settings):
    """The operator's allowlist as a deployment would set it: the provider defaults plus the tests' variable."""
    settings.JUDGE_KEY_VARS = [*settings.JUDGE_KEY_VARS, KEY_ENV]


@pytest.fixture(autouse=True)
def no_failed_token_counts():
    """Django's cache counts failed token attempts per address (config/token_throttle.py), and every test client
    calls from 127.0.0.1: without this, the 401s of earlier tests in the same minute would throttle later ones."""
    cache.clear()


@pytest.fixture(autouse=True)
def audit_figures_in_process(request, monkeypatch):
    """An audit plan's figures are a worker's (calibration/audits/stored_figures.py, issue 37). Tests that read
    them without starting one play the worker in their own process, with the worker's own code: a change only
    marks the figures behind, and whoever reads them (a page, the gate) has them computed at once, as a worker that
    is never late would. Tests marked `figures_worker` run the real path: a Celery worker, its queue, the wait."""
    if request.node.get_closest_marker("figures_worker"):
        return
    from datetime import timedelta

    from calibration.audits import group_figures, stored_figures

    monkeypatch.setattr(stored_figures, "after_commit", lambda fn: fn())
    monkeypatch.setattr(group_figures, "send", group_figures.recompute)  # an audit group's shared decision too
    monkeypatch.setattr(stored_figures, "notify", lambda plan_id: None)
    monkeypatch.setattr(stored_figures, "send", lambda plan_id, *at: stored_figures.recompute(plan_id, *at))
    monkeypatch.setattr(stored_figures, "KICK_AFTER", timedelta(0))


@pytest.fixture
def annotator(db):
    return make_user("ann", Role.ANNOTATOR)


@pytest.fixture
def annotator2(db):
    return make_user("ann2", Role.ANNOTATOR)


@pytest.fixture
def reviewer(db):
    return make_user("rev", Role.REVIEWER)


@pytest.fixture
def lead(db):
    return make_user("lead", Role.LEAD)


@pytest.fixture
def sides(db):
    """Two workspaces, alpha and beta, with objects of the same names (tests/two_workspaces.py)."""
    return build_side("alpha"), build_side("beta")


@pytest.fixture
def outsider(db):
    """An account that exists but may not log in (e.g. created by a label import)."""
    user = make_user("outsider", Role.ANNOTATOR)
    user.is_active = False
    user.save()
    return user


@pytest.fixture
def migrator():
    """`migrate(targets)` for a data-migration test; afterwards, pass or fail, every app's newest migration."""
    from .migration_helpers import migrate, migrate_to_latest

    yield migrate
    migrate_to_latest()


@pytest.fixture(scope="module")
def module_demo(django_db_setup, django_db_blocker):
    """The demo loaded once for a whole module (load_demo takes seconds), flushed when the module ends:
    (eval set, rubric version, the demo's instrument judge). Tests using it must not change the demo's rows."""
    from io import StringIO

    from django.core.management import call_command
    from django.test import override_settings

    from evals.models import EvalSet
    from judging.models import JudgeConfig
    from labeling.models import LabelingQueue
    from overview.management.commands.load_demo import EVAL_SET, JUDGE

    with (
        django_db_blocker.unblock(),
        override_settings(PASSWORD_HASHERS=["django.contrib.auth.hashers.MD5PasswordHasher"]),
    ):
        call_command("load_demo", verbosity=0, stdout=StringIO())
        es = EvalSet.objects.get(name=EVAL_SET)
        rv = LabelingQueue.objects.get(eval_set=es, is_current=True).rubric_version
        try:
            yield es, rv, JudgeConfig.objects.get(name=JUDGE)
        finally:
            call_command("flush", interactive=False, verbosity=0)


@pytest.fixture
def fake_llm():
    """The loopback OpenAI/Anthropic-compatible server (tests/fake_llm.py), stopped after the test."""
    with FakeLLM() as fake:
        yield fake


@pytest.fixture
def judge_key(monkeypatch):
    """The judge's API key in its allowlisted variable, for this test only."""
    monkeypatch.setenv(KEY_ENV, KEY_VALUE)
    return KEY_VALUE


@pytest.fixture
def offline(monkeypatch):
    """inspect_ai counts tokens by words and may not download tiktoken's encoding (tests/inspect_helpers.py)."""
    go_offline(monkeypatch)


@pytest.fixture(scope="module")
def refund_logs(tmp_path_factory) -> dict[str, Path]:
    """One .eval and one .json log of the same run of REFUND_SAMPLES, written once per test module."""
    with pytest.MonkeyPatch.context() as mp:
        go_offline(mp)
        where = tmp_path_factory.mktemp("inspect-logs")
        return {fmt: write_log(where / fmt, REFUND_SAMPLES, fmt=fmt) for fmt in ("eval", "json")}


@pytest.fixture
def workers(tmp_path):
    """`workers(concurrency=..., broker_url=...)` starts a real Celery worker (tests/services.py); all are stopped
    after the test, and this run's queue is purged before and after."""
    from config.celery import app
    from judging.models import JudgeRun

    from .services import Worker

    app.control.purge()  # nothing left over on this run's queue from earlier tests
    started: list[Worker] = []

    def start(**kwargs) -> Worker:
        worker = Worker(tmp_path, **kwargs)
        started.append(worker)
        return worker

    yield start
    for worker in started:
        worker.stop()
    # Lanes may still be queued for runs of this test: the next test's data must not meet them.
    JudgeRun.objects.filter(status__in=JudgeRun.ACTIVE).update(status="cancelled")
    app.control.purge()


@pytest.fixture
def beats(tmp_path):
    """`beats(broker_url, schedule_file, period_s=...)` starts a real Celery beat (tests/services.py) and waits for
    its first send; all are stopped after the test."""
    from .services import Beat

    started: list[Beat] = []

    def start(broker_url: str, schedule: Path, period_s: int) -> Beat:
        beat = Beat(tmp_path, broker_url, schedule, period_s)
        started.append(beat)
        return beat

    yield start
    for beat in started:
        beat.stop()


@pytest.fixture
def private_redis(tmp_path):
    """A redis-server of this test's own (tests/services.py): a test may stop and start it."""
    from .services import PrivateRedis

    server = PrivateRedis(tmp_path)
    server.start()
    yield server
    server.stop()


@pytest.fixture
def gunicorn(tmp_path):
    """`gunicorn(broker_url)` serves the app on the test database with that broker (tests/services.py); all are
    stopped after the test."""
    from .services import Gunicorn

    started: list[Gunicorn] = []

    def start(broker_url: str) -> Gunicorn:
        server = Gunicorn(tmp_path, broker_url)
        started.append(server)
        return server

    yield start
    for server in started:
        server.stop()


@pytest.fixture
def receiver():
    """A webhook receiver on loopback (tests/alert_helpers.py): set `answers` and `secret`, read `received`."""
    from .alert_helpers import Receiver

    server = Receiver()
    yield server
    server.stop()


@pytest.fixture
def smtp_server():
    """A real SMTP server on loopback (aiosmtpd); Django's SMTP backend pointed at it."""
    from .alert_helpers import SmtpServer

    server = SmtpServer()
    yield server
    server.stop()
