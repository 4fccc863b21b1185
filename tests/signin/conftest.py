from __future__ import annotations

import pytest

from signin.provider import forget_discovery
from tests.oidc_helpers import providers


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
