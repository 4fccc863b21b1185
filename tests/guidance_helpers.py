"""Builders for the judge guidance and split tests: an eval set whose outputs have adjudicated gold."""

from __future__ import annotations

from evals.models import EvalSet, Output, Role, RubricVersion, User

from .calibration_factories import adjudicate
from .factories import make_eval_set, make_output, make_rubric_version, make_user


def reviewer() -> User:
    return User.objects.filter(username="gold-rey").first() or make_user("gold-rey", Role.REVIEWER)


def gold_set(golds: list[dict[str, str]], *, eval_set: EvalSet | None = None, rubric: RubricVersion | None = None):
    """One output per entry of `golds` (criterion key -> gold outcome, adjudicated), each with its own response
    "Response number N: refund of $40.00 issued." (so excerpts and quotes can be told apart)."""
    eval_set = eval_set or make_eval_set()
    rubric = rubric or make_rubric_version()
    rey = reviewer()
    outputs: list[Output] = []
    for n, gold in enumerate(golds, start=1):
        output = make_output(
            eval_set, case_id=f"case-{n:03d}", response=f"Response number {n}: refund of $40.00 issued."
        )
        for key, outcome in gold.items():
            adjudicate(output, rubric, key, outcome, rey)
        outputs.append(output)
    return eval_set, rubric, outputs


def example(output: Output, outcome: str, *, quote: str = "refund of $40.00", **changes) -> dict:
    """A well-formed example drawn from `output`: its response as the excerpt, `quote` from it."""
    return {
        "output_id": output.pk,
        "input": output.case.input,
        "response": output.response,
        "outcome": outcome,
        "quote": quote,
        **changes,
    }
