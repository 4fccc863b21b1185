"""The import graph of our apps (docs/architecture.md): one way between apps, no circle inside one.

Apps, bottom to top: evals (the shared domain), labeling (the human side), judging (the judge), alerts (alerts
that reach people), calibration (comparing the two, the gate), formats (data in and out), api (the HTTP
surface), periodic (the jobs Celery beat runs), overview (pages that read several apps), config (the project).
An app imports only apps below it.
Inside an app, no two modules import each other, directly or round a longer circle. Every import counts, also
one inside a function: a lazy import is still a dependency, and a circle held together by one is still a circle.

Inside calibration, the sub-packages have an order of their own, bottom to top: stats (pure statistics: no
Django, no other app, nothing of calibration outside stats), data (frames and how they are read), audits,
report, gate, workbench. A sub-package's domain modules import only the sub-packages at or below it; its pages
(views.py, forms.py, urls.py, page.py) may read any sub-package's domain, but never another sub-package's views.
"""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
LAYERS = (
    "evals",
    "signin",
    "labeling",
    "judging",
    "alerts",
    "calibration",
    "formats",
    "watch",
    "api",
    "periodic",
    "overview",
    "config",
)

CALIBRATION_ROOMS = ("stats", "data", "audits", "report", "gate", "workbench")
PAGE_MODULES = {"views", "forms", "urls", "page"}
PROJECT = {*LAYERS, "django", "django_htmx", "ninja"}

# Circles inside an app that a change is removing (none today). A circle found must lie inside one of these.
KNOWN_CIRCLES: dict[frozenset[str], str] = {}


def app_paths(root: Path):
    """(app, path) of every Python file of the apps that exist (a negative control builds only some)."""
    for app in LAYERS:
        if (root / app).is_dir():
            for path in sorted((root / app).rglob("*.py")):
                yield app, path


def module_name(root: Path, path: Path) -> str:
    parts = list(path.relative_to(root).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def imported_modules(source: str, package: str = "") -> list[tuple[int, str, str]]:
    """(line, dotted module, name or "") of every import in `source`, wherever it stands; relative ones
    resolved from `package`. `from a import b` gives (line, "a", "b"): b may be a module of package a."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            found += [(node.lineno, alias.name, "") for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")[: len(package.split(".")) - (node.level - 1)]
                module = ".".join([*base, node.module] if node.module else base)
            else:
                module = node.module or ""
            found += [(node.lineno, module, alias.name) for alias in node.names]
    return found


def backward_imports(root: Path) -> list[str]:
    """Each import of a higher layer from a lower one, as 'path:line: app imports other'."""
    problems = []
    for app, path in app_paths(root):
        package = module_name(root, path.parent)
        seen = set()
        for line, module, _ in imported_modules(path.read_text(encoding="utf-8"), package):
            target = module.split(".")[0]
            if target in LAYERS and LAYERS.index(target) > LAYERS.index(app) and (line, module) not in seen:
                seen.add((line, module))
                problems.append(f"{path.relative_to(root)}:{line}: {app} imports {module}")
    return problems


def module_graph(root: Path, app: str) -> dict[str, set[str]]:
    """Module -> the modules of the same app it imports (a package is its __init__; `from package import
    module` depends on that module, not on the package's __init__)."""
    paths = {module_name(root, p): p for a, p in app_paths(root) if a == app}
    graph: dict[str, set[str]] = {m: set() for m in paths}
    for module, path in paths.items():
        package = module if path.name == "__init__.py" else module.rpartition(".")[0]
        for _, imported, name in imported_modules(path.read_text(encoding="utf-8"), package):
            target = f"{imported}.{name}" if f"{imported}.{name}" in paths else imported
            if target in paths and target != module:
                graph[module].add(target)
    return graph


def circles(graph: dict[str, set[str]]) -> list[frozenset[str]]:
    """The strongly connected components of more than one module (Tarjan's algorithm)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: list[frozenset[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for nxt in sorted(graph[node]):
            if nxt not in index:
                visit(nxt)
                low[node] = min(low[node], low[nxt])
            elif nxt in on_stack:
                low[node] = min(low[node], index[nxt])
        if low[node] == index[node]:
            component = set()
            while True:
                member = stack.pop()
                on_stack.discard(member)
                component.add(member)
                if member == node:
                    break
            if len(component) > 1:
                found.append(frozenset(component))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return found


def unknown_circles(root: Path, known=()) -> list[list[str]]:
    return [
        sorted(circle)
        for app in LAYERS
        if (root / app).is_dir()
        for circle in circles(module_graph(root, app))
        if not any(circle <= allowed for allowed in known)
    ]


def room_of(module: str) -> str | None:
    parts = module.split(".")
    return parts[1] if len(parts) > 2 and parts[0] == "calibration" and parts[1] in CALIBRATION_ROOMS else None


def room_problems(root: Path) -> list[str]:
    """Each import that breaks calibration's order of rooms or the purity of stats, as 'path:line: why'."""
    problems = []
    for app, path in app_paths(root):
        module = module_name(root, path)
        room = room_of(module)
        if app != "calibration" or room is None:
            continue
        package = module if path.name == "__init__.py" else module.rpartition(".")[0]
        is_page = module.rpartition(".")[2] in PAGE_MODULES
        for line, imported, name in imported_modules(path.read_text(encoding="utf-8"), package):
            target = f"{imported}.{name}" if name and room_of(f"{imported}.{name}") else imported
            where = f"{path.relative_to(root)}:{line}"
            if room == "stats":
                if imported.split(".")[0] in PROJECT and room_of(target) != "stats":
                    problems.append(f"{where}: stats is pure and imports {target}")
                continue
            other = room_of(target)
            if other is None or other == room:
                continue
            if is_page and target.rpartition(".")[2] == "views":
                problems.append(f"{where}: {room} pages import {other}'s views")
            elif not is_page and CALIBRATION_ROOMS.index(other) > CALIBRATION_ROOMS.index(room):
                problems.append(f"{where}: {room} imports {target}, a room above it")
    return problems


def test_no_app_imports_one_above_it():
    assert backward_imports(ROOT) == []


def test_no_circle_of_imports_inside_an_app():
    assert unknown_circles(ROOT, KNOWN_CIRCLES) == []


def test_a_backward_import_is_found_even_inside_a_function(tmp_path):
    # Negative control: a lazy import from labeling into calibration, a plain one into judging, and
    # evals importing labeling; calibration importing below itself is fine.
    (tmp_path / "labeling").mkdir()
    (tmp_path / "labeling" / "gold.py").write_text(
        "import os\nfrom judging.models import Verdict\n\ndef f():\n    from calibration.stats.metrics import MIN_N\n"
    )
    (tmp_path / "evals").mkdir()
    (tmp_path / "evals" / "access.py").write_text("from labeling import queue\n")
    (tmp_path / "calibration").mkdir()
    (tmp_path / "calibration" / "report.py").write_text("from labeling.models import Output\nimport judging.io\n")
    assert backward_imports(tmp_path) == [
        "evals/access.py:1: evals imports labeling",
        "labeling/gold.py:2: labeling imports judging.models",
        "labeling/gold.py:5: labeling imports calibration.stats.metrics",
    ]


def test_a_circle_is_found_even_when_a_lazy_or_relative_import_closes_it(tmp_path):
    # Negative control: runner -> lane (relative) -> tasks -> runner (inside a function); parse is imported
    # by all three but imports none of them, so it is no part of the circle; another app's import is not.
    judging = tmp_path / "judging"
    judging.mkdir()
    (judging / "__init__.py").write_text("")
    (judging / "runner.py").write_text("from . import lane\nfrom judging.parse import parse\n")
    (judging / "lane.py").write_text("from .tasks import enqueue\nfrom . import parse\n")
    (judging / "tasks.py").write_text("import judging.parse\n\ndef enqueue():\n    from judging import runner\n")
    (judging / "parse.py").write_text("from labeling import models\n")
    (tmp_path / "labeling").mkdir()
    (tmp_path / "labeling" / "queue.py").write_text("from labeling import views\n")
    (tmp_path / "labeling" / "views.py").write_text("from labeling.queue import move\n")
    assert unknown_circles(tmp_path) == [
        ["labeling.queue", "labeling.views"],
        ["judging.lane", "judging.runner", "judging.tasks"],
    ]
    allowed = {frozenset({"judging.lane", "judging.runner", "judging.tasks", "judging.warmup"}): "someone"}
    assert unknown_circles(tmp_path, allowed) == [["labeling.queue", "labeling.views"]]


def test_calibration_rooms_keep_their_order_and_stats_stays_pure():
    assert room_problems(ROOT) == []


def test_a_room_above_a_page_importing_views_and_an_impure_stat_are_found(tmp_path):
    # Negative control: stats importing Django and the report; audits importing the report (above it), lazily;
    # gate's views importing report's views. Allowed: report importing audits and stats, views reading any domain.
    def write(rel: str, text: str) -> None:
        path = tmp_path / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)

    write("calibration/stats/metrics.py", "import numpy\nfrom django.db import models\nfrom ..report import rows\n")
    write("calibration/stats/bounds.py", "from calibration.stats.metrics import MIN_N\n")
    write(
        "calibration/audits/plans.py",
        "from calibration.stats import bounds\n\ndef f():\n    from calibration.report import rows\n",
    )
    write(
        "calibration/report/rows.py", "from calibration.audits.plans import f\nfrom calibration.stats import metrics\n"
    )
    write("calibration/report/views.py", "from calibration.gate.release import decide\n")
    write(
        "calibration/gate/views.py", "from calibration.report import views\nfrom calibration.workbench.looks import x\n"
    )
    assert room_problems(tmp_path) == [
        "calibration/audits/plans.py:4: audits imports calibration.report.rows, a room above it",
        "calibration/gate/views.py:1: gate pages import report's views",
        "calibration/stats/metrics.py:2: stats is pure and imports django.db",
        "calibration/stats/metrics.py:3: stats is pure and imports calibration.report.rows",
    ]
