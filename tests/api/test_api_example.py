"""The CI example of docs/api.md, run verbatim against a live server with a real Celery worker over Redis."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from calibration.models import GateResult
from evals.models import Output
from judging.models import JudgeRun
from tests.api_helpers import create_token
from tests.factories import make_eval_set, make_judge, make_rubric_version, mark_as_gating
from tests.io_helpers import jsonl

pytestmark = [pytest.mark.celery, pytest.mark.django_db(transaction=True)]
DOC = Path(__file__).resolve().parents[2] / "docs" / "api.md"
INSTRUMENTS = {
    "correct_amount": {"kind": "reference_values_contained", "pattern": r"\$\d+\.\d{2}"},
    "next_step": {"kind": "regex_must_match", "pattern": "business days"},
}
# 40 of 40 PASS: a 95% Wilson lower bound of 0.912, over the default minimum of 0.90 (39 of 39 would be 0.910,
# 30 of 30 only 0.886), so the gate can pass on this many outputs.
OUTPUTS = 40


def example_code() -> str:
    """The first python block under "## Example: a CI job", exactly as the docs show it."""
    section = DOC.read_text().split("## Example: a CI job", 1)[1]
    return re.search(r"```python\n(.*?)```", section, flags=re.S).group(1)


def output_line(i: int, response: str) -> dict:
    return {
        "case_id": f"rc-{i:03d}",
        "agent_version": "v2",
        "input": f"I was charged twice for order {1000 + i}.",
        "reference": "Refund $40.00 for the duplicate charge.",
        "response": response,
    }


@pytest.fixture
def ci(client, lead, live_server, tmp_path):
    rubric = make_rubric_version("refund-support", "1")
    judge = make_judge("ci-instruments", model_id="", backend="instrument", instruments=INSTRUMENTS)
    mark_as_gating(rubric, judge, ["correct_amount"], make_eval_set("calibration"), by=lead)
    script = tmp_path / "ci_gate.py"
    script.write_text(example_code())
    env = {
        **os.environ,
        "ICEWATER_URL": live_server.url,
        "ICEWATER_TOKEN": create_token(client, lead, ["push", "judge", "gate"], rubric, pattern="rc-*"),
        "EVAL_SET": "rc-42",
        "RUBRIC": "refund-support@1",
        "JUDGE": "ci-instruments",
    }

    def run(lines: list[dict]) -> subprocess.CompletedProcess:
        (tmp_path / "outputs.jsonl").write_text(jsonl(*lines))
        return subprocess.run(
            [sys.executable, str(script)], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=180
        )

    return run


def test_the_docs_example_pushes_judges_and_gates_a_release(ci, workers):
    workers(concurrency=2)
    good = "Your refund of $40.00 is on its way; it arrives within 5 business days."
    done = ci([output_line(i, good) for i in range(OUTPUTS)])
    assert done.returncode == 0, done.stdout + done.stderr
    assert f"{OUTPUTS} outputs created" in done.stdout
    assert f"{OUTPUTS * 2} of {OUTPUTS * 2} verdicts" in done.stdout
    assert "PASSED (binding criterion: correct_amount)" in done.stdout
    assert GateResult.objects.get().decision == "passed"
    assert JudgeRun.objects.get().status == "done"


def test_the_docs_example_stops_at_a_bad_push_and_nothing_is_written(ci):
    lines = [output_line(1, "Refunded $40.00."), {**output_line(2, "x"), "latency_ms": "slow"}]
    refused = ci(lines)
    assert refused.returncode == 1
    assert "push refused (400): the push was refused; nothing was imported" in refused.stderr
    assert 'outputs.jsonl, line 2, field "latency_ms": must be a number of milliseconds' in refused.stderr
    assert not Output.objects.exists() and not JudgeRun.objects.exists() and not GateResult.objects.exists()
