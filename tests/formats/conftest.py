"""The importers' and exporters' tests run in a database with one workspace, `default`, as an operator's is
once `add_workspace` (or the migration of a database from before workspaces) has made it: the commands then need
no --workspace. tests/config/test_command_workspaces.py covers none, an unknown one and several."""

from __future__ import annotations

import pytest

from tests.factories import default_workspace


@pytest.fixture(autouse=True)
def _one_workspace(request, _django_db_marker) -> None:  # after pytest-django has opened the test's database
    if request.node.get_closest_marker("django_db") is not None:
        default_workspace()
