"""The formats app: every format in one table, and no module of it leaning on another in a circle."""

from __future__ import annotations

import ast
import io
from pathlib import Path

import pytest

from evals.problems import Problems
from formats import registry
from formats.case_import import detect_kind
from formats.readers import Source

ROOT = Path(__file__).resolve().parents[2]


def formats_imports(folder: Path) -> dict[str, set[str]]:
    """module -> the formats modules it imports, anywhere in it (a lazy import inside a function counts)."""
    modules = {p.stem: p for p in folder.glob("*.py")}
    graph = {}
    for name, path in modules.items():
        found = set()
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if not isinstance(node, ast.ImportFrom):
                continue
            if node.level == 1:
                found |= {node.module.split(".")[0]} if node.module else {a.name for a in node.names}
            elif node.level == 0 and node.module and node.module.split(".")[0] == "formats":
                found |= {node.module.split(".")[1]} if "." in node.module else {a.name for a in node.names}
        graph[name] = found & set(modules) - {name}
    return graph


def circles(graph: dict[str, set[str]]) -> list[list[str]]:
    found = []

    def walk(start: str, node: str, path: list[str]) -> None:
        for nxt in sorted(graph[node]):
            if nxt == start:
                found.append(path)
            elif nxt not in path and nxt > start:  # each circle once, from its smallest module
                walk(start, nxt, [*path, nxt])

    for module in sorted(graph):
        walk(module, module, [module])
    return found


def test_no_module_of_formats_is_in_an_import_circle():
    assert circles(formats_imports(ROOT / "formats")) == []


def test_a_circle_through_a_lazy_import_is_found(tmp_path):
    # Negative control: the circle the registry replaced (cases -> adk lazily, adk -> cases at the top).
    (tmp_path / "case_import.py").write_text("def rows():\n    from . import adk\n")
    (tmp_path / "adk.py").write_text("from formats.case_import import build_rows\n")
    (tmp_path / "readers.py").write_text("import json\n")
    assert circles(formats_imports(tmp_path)) == [["adk", "case_import"]]


@pytest.mark.parametrize(
    ("name", "content", "kind"),
    [
        ("cases.jsonl", b'{"case_id": "c1", "input": "Q"}\n', "jsonl"),
        ("cases.csv", b"case_id,input\nc1,Q\n", "csv"),
        ("x.evalset.json", b'{"eval_set_id": "s", "eval_cases": []}', "adk_evalset"),
        ("x.evalset_result.json", b'{"eval_case_results": []}', "adk_result"),
        ("export.json", b'{\n  "eval_set_id": "s"\n}\n', "json_document"),
    ],
)
def test_every_kind_of_cases_file_an_import_tells_apart_has_a_reader_in_the_table(name, content, kind):
    told = detect_kind(Source(name=name, stream=io.BytesIO(content)), Problems(name))
    assert told == kind and registry.find(registry.CASES, told).kind == registry.CASES


def test_a_format_the_table_does_not_hold_is_a_key_error():
    with pytest.raises(KeyError):
        registry.find(registry.LABELS, "adk_result")
