"""Builders for the probe tests: a rubric and an instrument judge whose flip rates are known by hand."""

from __future__ import annotations

from judging import runner
from judging.models import JudgeRun, ProbeRun
from judging.probes import choose
from judging.probes import runs as probe_runs
from tests.factories import make_rubric_version
from tests.judging_helpers import make_judge, make_scope

CRITERIA = [
    {"key": "correct_amount", "definition": "The amount stated matches the reference."},
    {"key": "next_step", "definition": "Says when the money arrives."},
    {"key": "substance", "definition": "A substantial answer."},
    {"key": "amount_noted", "definition": "Mentions the amount."},
]
INSTRUMENTS = {
    "correct_amount": {"kind": "reference_values_contained", "pattern": r"\$\d+\.\d{2}"},
    "next_step": {"kind": "regex_must_match", "pattern": r"within \d+ business days"},
    # Fooled by padding by design: a long answer passes, whatever it says.
    "substance": {"kind": "min_length", "min_words": 30},
    # Ignores its input: only a negative control can show it.
    "amount_noted": {"kind": "constant", "outcome": "PASS"},
}
RIGHT = "I have issued a refund of $40.00. You will see it within 5 business days."  # reference: $40.00
WRONG = "I have issued a refund of $45.00. You will see it within 5 business days."
NO_NEXT_STEP = "Refund of $40.00 done."
RESPONSES = [RIGHT] * 6 + [WRONG] * 2 + [NO_NEXT_STEP] * 2


def make_instrumented(name: str = "refund", eval_set=None, judge: str = "instruments") -> runner.Scope:
    """10 outputs, the four criteria above (rubric NAME@1) and the instrument judge JUDGE."""
    judge = make_judge(name=judge, backend="instrument", instruments=INSTRUMENTS)
    rubric = make_rubric_version(name=name, criteria=CRITERIA)
    return make_scope(judge, responses=RESPONSES, rubric=rubric, eval_set=eval_set)


def probe_in_process(scope: runner.Scope, names: list[str], **kwargs) -> ProbeRun:
    probe_run = probe_runs.create_probe_run(scope, choose(names), mode=JudgeRun.Mode.IN_PROCESS, **kwargs)
    probe_runs.run_in_process(probe_run)
    return probe_run
