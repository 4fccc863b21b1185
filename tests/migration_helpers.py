"""Moving the test database between migrations, for tests of a data migration.

A test takes the `migrator` fixture (tests/conftest.py: `migrate` below) and calls it with targets;
whatever happens in the test, the database is brought back to every app's newest migration afterwards, so
a failing or incomplete migration test cannot leave the tables that later tests expect missing.
"""

from __future__ import annotations

from django.db import connection
from django.db.migrations.executor import MigrationExecutor


def migrate(targets):
    """Migrate to `targets` ([(app, migration name)]) and return the historical models' registry there.

    Every other app the targets depend on is taken to the newest of its migrations they depend on, so the tables
    are exactly what the returned models expect: a test that names only calibration 0010 also gets evals before
    its workspaces (evals 0003), whose required column the old models would not fill.
    """
    executor = MigrationExecutor(connection)
    graph = executor.loader.graph
    named = {app for app, _ in targets if app}
    newest: dict[str, tuple[str, str]] = {}
    for target in targets:
        if target[1] is None:
            continue
        for node in graph.forwards_plan(target):
            app = node[0]
            if app not in named and (
                app not in newest or node in graph.forwards_plan(node) and _later(graph, node, newest[app])
            ):
                newest[app] = node
    executor.migrate([*targets, *newest.values()])
    return MigrationExecutor(connection).loader.project_state(targets).apps


def _later(graph, node: tuple[str, str], than: tuple[str, str]) -> bool:
    """`node` comes after `than` in their app's history."""
    return than in graph.forwards_plan(node)


def migrate_to_latest() -> None:
    """Every app's newest migration, as the next tests expect.

    A test that left the history of a database from before the shared models moved (evals 0001 unrecorded)
    gets what evals' migrate command does first, else the next tests would find no tables at all.
    """
    from evals.management.commands.migrate import record_state_only_move

    record_state_only_move(connection)
    migrate(MigrationExecutor(connection).loader.graph.leaf_nodes())


def old_rubric_version(old, rubric: str, version: str, *, keys=("correct_amount", "polite"), app="labeling", **fields):
    """A rubric version with criteria `keys`, written through the historical models in `old` (the shared models
    are in `app`: labeling before calibration 0011, evals after); the rubric is made on first use."""
    found, _ = old.get_model(app, "Rubric").objects.get_or_create(name=rubric)
    made = old.get_model(app, "RubricVersion").objects.create(
        rubric=found, version=version, instruction="Grade it.", content_hash="r" * 64, **fields
    )
    for order, key in enumerate(keys):
        old.get_model(app, "Criterion").objects.create(
            rubric_version=made, key=key, definition=f"{key} holds.", order=order
        )
    return made
