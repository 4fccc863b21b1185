"""Imports between our apps go one way: labeling <- judging <- calibration <- api <- config.

labeling holds the shared domain (eval sets, cases, outputs, rubrics) and the human side (labels,
adjudication, gold); judging adds judge configs, runs and verdicts on top of it; calibration compares
the two; api exposes all three over HTTP; config is the project (settings, URLs, the Celery app) and may
import anything. Every import counts, also one inside a function: a lazy import is still a dependency.
"""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
LAYERS = ("labeling", "judging", "calibration", "formats", "api", "config")


def imported_modules(source: str) -> list[tuple[int, str]]:
    """(line, dotted module) of every absolute import in `source`, wherever it stands."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            found += [(node.lineno, alias.name) for alias in node.names]
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            found.append((node.lineno, node.module))
    return found


def backward_imports(root: Path) -> list[str]:
    """Each import of a higher layer from a lower one, as 'path:line: app imports other'."""
    problems = []
    for rank, app in enumerate(LAYERS):
        for path in sorted((root / app).rglob("*.py")):
            for line, module in imported_modules(path.read_text(encoding="utf-8")):
                target = module.split(".")[0]
                if target in LAYERS and LAYERS.index(target) > rank:
                    problems.append(f"{path.relative_to(root)}:{line}: {app} imports {module}")
    return problems


def test_no_app_imports_one_above_it():
    assert backward_imports(ROOT) == []


def test_a_backward_import_is_found_even_inside_a_function(tmp_path):
    # Negative control: a lazy import from labeling into calibration, and a plain one into judging.
    (tmp_path / "labeling").mkdir()
    (tmp_path / "labeling" / "gold.py").write_text(
        "import os\nfrom judging.models import Verdict\n\ndef f():\n    from calibration.metrics import MIN_N\n"
    )
    (tmp_path / "calibration").mkdir()
    (tmp_path / "calibration" / "report.py").write_text("from labeling.models import Output\nimport judging.io\n")
    assert backward_imports(tmp_path) == [
        "labeling/gold.py:2: labeling imports judging.models",
        "labeling/gold.py:5: labeling imports calibration.metrics",
    ]
