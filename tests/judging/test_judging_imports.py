"""A judge run's modules import one way: tasks -> runner -> lane -> run_status, with no way back.

The runner plans and enqueues (the lane task by its name), the lane works items, run_status holds every
change of a run's status, and the Celery tasks only call into them. Every import counts, also one inside a
function: a lazy import is still a circle.
"""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
RUN_MODULES = ("runner", "lane", "tasks", "warmup", "run_status")


def imports_within(package: str, module: str, source: str) -> set[str]:
    """The modules of `package` (top level, by short name) that `source`, the module `module`, imports."""
    found = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.ImportFrom):
            if node.level == 1:
                names = [node.module] if node.module else [alias.name for alias in node.names]
            elif node.level == 0 and node.module and node.module.startswith(f"{package}."):
                names = [node.module.removeprefix(f"{package}.")]
            elif node.level == 0 and node.module == package:
                names = [alias.name for alias in node.names]
            else:
                continue
            found |= {name.split(".")[0] for name in names}
        elif isinstance(node, ast.Import):
            found |= {a.name.split(".")[1] for a in node.names if a.name.startswith(f"{package}.")}
    return found - {module}


def import_graph(root: Path, package: str, modules: tuple[str, ...]) -> dict[str, set[str]]:
    """Which of `modules` each of them imports."""
    return {
        name: imports_within(package, name, (root / package / f"{name}.py").read_text(encoding="utf-8")) & set(modules)
        for name in modules
    }


def circles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Every import circle of the graph, each once, as the path that closes it."""
    found: list[list[str]] = []

    def walk(path: list[str]) -> None:
        for target in sorted(graph.get(path[-1], ())):
            if target == path[0]:
                found.append([*path, target])
            elif target not in path and target > path[0]:  # each circle once, from its smallest module
                walk([*path, target])

    for start in sorted(graph):
        walk([start])
    return found


def test_a_runs_modules_import_one_way():
    graph = import_graph(ROOT, "judging", RUN_MODULES)
    assert circles(graph) == []
    # The direction itself: nothing below imports what sits above it.
    assert graph["run_status"] == set()
    assert graph["lane"] == {"run_status"}
    assert graph["runner"] == {"lane", "run_status"}
    assert graph["tasks"] <= {"runner", "lane", "run_status", "warmup"}


def test_a_circle_through_a_function_level_import_is_found(tmp_path):
    # Negative control: today's shape, a lane importing the runner inside a function, and the runner back.
    (tmp_path / "judging").mkdir()
    sources = {
        "runner": "from . import run_status\n\ndef work_lane(run_id):\n    from .lane import work_lane as work\n",
        "lane": "from django.db import F\n\ndef work_lane(run_id):\n    from .runner import fail_run\n",
        "tasks": "from judging import runner\nfrom .warmup import warm_up\n",
        "warmup": "def warm_up():\n    import judging.lane\n",
        "run_status": "from .models import JudgeRun\n",
    }
    for name, source in sources.items():
        (tmp_path / "judging" / f"{name}.py").write_text(source)
    graph = import_graph(tmp_path, "judging", RUN_MODULES)
    assert graph["warmup"] == {"lane"} and graph["tasks"] == {"runner", "warmup"}
    assert circles(graph) == [["lane", "runner", "lane"]]


def test_the_runner_queues_lanes_by_the_name_the_lane_task_is_registered_under():
    from celery import signature

    from judging import runner, tasks

    assert tasks.run_lane.name == runner.RUN_LANE_TASK
    assert signature(runner.RUN_LANE_TASK).type is tasks.run_lane._get_current_object()
