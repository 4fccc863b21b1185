"""Builders for the judge guidance and split tests: an eval set whose outputs have adjudicated gold."""

from __future__ import annotations

from typing import NamedTuple

from evals.models import EvalSet, Output, Role, RubricVersion, User
from judging.gold_splits import start_split
from judging.guidance import derive_config
from judging.models import GoldSplit, JudgeConfig

from .factories import (
    add_verdict,
    adjudicate,
    make_eval_set,
    make_llm_judge,
    make_output,
    make_rubric_version,
    make_run,
    make_user,
)


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


# 12 outputs: next_step gold PASS on 6, FAIL on 6 (so with seed 3 each part gets 3 and 3: one stratum each of 6).
HELD_OUT_GOLDS = [{"next_step": "PASS"}] * 6 + [{"next_step": "FAIL"}] * 6


class HeldOutWorld(NamedTuple):
    eval_set: EvalSet
    rubric: RubricVersion
    split: GoldSplit
    v2: JudgeConfig
    outputs: list[Output]
    gold: dict[int, str]


def held_out_world(lead: User) -> HeldOutWorld:
    """An approved rubric version, a split fixed with seed 3, and `support-judge-v2` with one development example:
    right on every development item, PASS on every held-out one (3 true passes, 3 false passes there)."""
    eval_set, rubric, outputs = gold_set(HELD_OUT_GOLDS)
    RubricVersion.objects.filter(pk=rubric.pk).update(status=RubricVersion.Status.APPROVED)
    rubric.refresh_from_db()
    split = start_split(eval_set=eval_set, rubric_version=rubric, by=lead, seed=3)
    gold = {o.pk: g["next_step"] for o, g in zip(outputs, HELD_OUT_GOLDS, strict=True)}
    dev = [o for o in outputs if o.pk in split.development]
    v2 = derive_config(
        base=make_llm_judge(name="support-judge"),
        guidance={
            "rubric": rubric.ref,
            "criteria": {"next_step": {"examples": [example(dev[0], gold[dev[0].pk])]}},
        },
        by=lead,
    )
    run = make_run(eval_set, rubric, v2)
    for o in outputs:
        add_verdict(run, o, "next_step", gold[o.pk] if o.pk in split.development else "PASS")
    return HeldOutWorld(eval_set, rubric, split, v2, outputs, gold)
