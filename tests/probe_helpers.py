"""Running probes in process for the probe tests (their rubric and instrument judge: factories.make_instrumented)."""

from __future__ import annotations

from judging import runner
from judging.models import JudgeRun, ProbeRun
from judging.probes import choose
from judging.probes import runs as probe_runs


def probe_in_process(scope: runner.Scope, names: list[str], **kwargs) -> ProbeRun:
    probe_run = probe_runs.create_probe_run(scope, choose(names), mode=JudgeRun.Mode.IN_PROCESS, **kwargs)
    probe_runs.run_in_process(probe_run)
    return probe_run
