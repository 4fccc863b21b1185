"""`inspect eval` with the mock model on a machine without network.

inspect_ai counts tokens with tiktoken's o200k_base encoding, downloaded on first use: offline, `inspect eval
--model mockllm/model` stopped at the first call and wrote a log without samples, and the way round it lived
only in the tests. `manage.py inspect_eval` is that way for users: Inspect's own `inspect eval` with tokens
counted by words. Both run here as a person would, in a fresh process whose every download fails (a proxy on a
closed port, an empty tiktoken cache), whatever network the machine has.
"""

from __future__ import annotations

import io
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from django.core.management import CommandError, call_command

from evals.models import Output
from tests.config.test_settings import ROOT

TASK = textwrap.dedent(
    """
    from inspect_ai import Task, task
    from inspect_ai.dataset import Sample
    from inspect_ai.scorer import includes
    from inspect_ai.solver import generate


    @task
    def refunds():
        samples = [Sample(id="r-001", input="Refund for order 1234?", target="Default output")]
        return Task(dataset=samples, solver=[generate()], scorer=includes())
    """
)


def offline_env(tmp_path: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k.upper() not in ("NO_PROXY", "TIKTOKEN_CACHE_DIR")}
    (tmp_path / "tiktoken-cache").mkdir()
    closed = "http://127.0.0.1:9"  # nothing listens on the discard port: every download fails at once
    return env | {"TIKTOKEN_CACHE_DIR": str(tmp_path / "tiktoken-cache"), "HTTPS_PROXY": closed, "HTTP_PROXY": closed}


def run(argv: list[str], tmp_path: Path) -> subprocess.CompletedProcess:
    (tmp_path / "task.py").write_text(TASK)
    return subprocess.run(
        argv, cwd=tmp_path, env=offline_env(tmp_path), capture_output=True, text=True, timeout=300, check=False
    )


def the_log(tmp_path: Path):
    from inspect_ai.log import read_eval_log

    [path] = (tmp_path / "logs").glob("*.eval")
    return path, read_eval_log(str(path))


@pytest.mark.subprocess
def test_plain_inspect_eval_needs_the_network_for_its_token_count(tmp_path):
    # The negative control: what a person met, and why the helper exists.
    inspect = Path(sys.executable).parent / "inspect"
    done = run([str(inspect), "eval", "task.py", "--model", "mockllm/model", "--log-dir", "logs"], tmp_path)
    _, log = the_log(tmp_path)
    assert log.status == "error" and all(sample.error for sample in log.samples)
    assert "o200k_base" in done.stdout + done.stderr


@pytest.mark.subprocess
@pytest.mark.django_db
def test_inspect_eval_through_manage_py_writes_a_complete_log_that_imports(tmp_path):
    argv = [sys.executable, str(ROOT / "manage.py"), "inspect_eval", "task.py", "--model", "mockllm/model"]
    done = run([*argv, "--log-dir", "logs", "--display", "none"], tmp_path)
    assert done.returncode == 0, done.stdout + done.stderr
    path, log = the_log(tmp_path)
    assert log.status == "success" and [s.id for s in log.samples] == ["r-001"]
    assert log.samples[0].output.completion.startswith("Default output")
    call_command("import_cases", "--eval-set", "offline", str(path), stdout=io.StringIO())
    assert Output.objects.get().agent_version == "mockllm/model"


def test_inspect_eval_without_a_task_says_what_to_give():
    with pytest.raises(CommandError, match="name the task, as for inspect eval"):
        call_command("inspect_eval")
