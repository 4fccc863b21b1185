from __future__ import annotations

import logging

import pytest

from signin.provider import forget_discovery
from tests.oidc_helpers import providers


@pytest.fixture(autouse=True)
def sign_in_log_reaches_caplog(caplog):
    """The refusal line goes to `icewater.signin`; caplog listens on the root logger. In the whole suite (not
    alone) the line did not reach it: something earlier in the run had changed the logging it propagates through
    (seen on a fresh clone, 16 sign-in tests). The tests check what the app logs on its own logger, so they listen
    there, with that logger and the global switch as a fresh process has them, and put everything back after."""
    logger = logging.getLogger("icewater.signin")
    was = (logger.disabled, logger.propagate, logger.level, logging.root.manager.disable)
    logger.disabled, logger.propagate = False, False  # caplog's handler is on it: once, not again through root
    logger.setLevel(logging.INFO)
    logging.disable(logging.NOTSET)
    logger.addHandler(caplog.handler)
    yield
    logger.removeHandler(caplog.handler)
    logger.disabled, logger.propagate = was[0], was[1]
    logger.setLevel(was[2])
    logging.disable(was[3])


@pytest.fixture(autouse=True)
def fresh_discovery():
    forget_discovery()
    yield
    forget_discovery()


@pytest.fixture
def start_provider(tmp_path):
    with providers(tmp_path) as start:
        yield start


@pytest.fixture
def workspaces(db):
    """The workspace the tests' role map names (tests/oidc_helpers.py), and one it does not."""
    from tests.factories import make_workspace

    return {slug: make_workspace(slug) for slug in ("refund-support", "side-project")}
