from __future__ import annotations

import pytest
from django.core.cache import cache

from evals.models import Role

from .factories import make_user
from .judging_helpers import KEY_ENV


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
    from workspace.management.commands.load_demo import EVAL_SET, JUDGE

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
