"""The Inspect AI worked example of docs/formats.md, checked against a real log written by inspect_ai."""

from __future__ import annotations

import io
import json
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from django.core.management import call_command

from formats.label_import import import_labels
from tests.factories import default_workspace, make_rubric_version
from tests.inspect_helpers import INSPECT_MODEL
from tests.io_helpers import jsonl, source

pytestmark = pytest.mark.django_db
DOC = Path(__file__).resolve().parents[2] / "docs" / "formats.md"
# Ids inspect_ai draws at random for every run: the docs show them as "...".
RANDOM_IDS = ("eval_id", "run_id", "sample_uuid")


def worked_example() -> str:
    return DOC.read_text().split("### Worked example: an Inspect AI log", 1)[1].split("\n## ", 1)[0]


def blocks(lang: str) -> list[str]:
    return re.findall(rf"```{lang}\n(.*?)```", worked_example(), flags=re.S)


def command(*args) -> str:
    out = io.StringIO()
    call_command(*args, stdout=out)
    return out.getvalue()


@pytest.fixture
def imported(refund_logs, offline, tmp_path):
    """What the worked example does, step by step: the log's cases, the rubric, people's gold, the grader."""
    shutil.copy(refund_logs["eval"], tmp_path / "run.eval")
    command("import_cases", "--eval-set", "refunds", str(tmp_path / "run.eval"))
    make_rubric_version("refund-support", "1")
    gold = [
        {"case_id": c, "agent_version": INSPECT_MODEL, "criterion": "correct_amount", "adjudicator": "rita"}
        | {"outcome": o, "rationale": r}
        for c, o, r in [
            ("r-001", "PASS", "$40.00 is the duplicate charge."),
            ("r-002", "FAIL", "$45.00 is not the $25.50 owed."),
            ("r-003", "PASS", "No amount is stated, so none is wrong."),
        ]
    ]
    import_labels(
        workspace=default_workspace(),
        source=source("gold.jsonl", jsonl(*gold)),
        eval_set_name="refunds",
        rubric_ref="refund-support@1",
    )
    return tmp_path


def test_the_cases_line_shown_is_what_the_log_imports_as(imported):
    exported = command("export_data", "--eval-set", "refunds", "--what", "cases").splitlines()
    first = json.loads(exported[0])
    shown = json.loads(blocks("json")[0])
    for key in RANDOM_IDS:
        assert first["output_metadata"]["inspect"][key]
        first["output_metadata"]["inspect"][key] = "..."
    assert isinstance(first["latency_ms"], int) and first["latency_ms"] >= 0  # a timing: it varies
    first["latency_ms"] = shown["latency_ms"]
    assert first == shown


def test_the_gold_export_shown_is_what_export_data_writes(imported):
    exported = command("export_data", "--eval-set", "refunds", "--rubric", "refund-support@1", "--what", "gold")
    assert exported.strip() == blocks("json")[1].strip()


@pytest.mark.subprocess
def test_the_check_of_the_scorer_against_gold_runs_as_shown(imported):
    gold = command("export_data", "--eval-set", "refunds", "--rubric", "refund-support@1", "--what", "gold")
    (imported / "gold.jsonl").write_text(gold)
    (imported / "check_scorer.py").write_text(blocks("python")[0])
    # A fresh interpreter, offline: reading the log must need no tiktoken download.
    done = subprocess.run(
        [sys.executable, "check_scorer.py"], cwd=imported, capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == blocks("text")[0].strip()


def test_the_verdicts_import_shown_imports_the_graders_scores(imported):
    shown = blocks("sh")[1].replace("\\\n", " ")
    flags = re.search(r"import_verdicts (.*?) run\.eval", shown).group(1).split()
    report = command("import_verdicts", *flags, str(imported / "run.eval"))
    assert "3 verdicts imported" in report and "(PASS 1, FAIL 2," in report
