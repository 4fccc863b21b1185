"""A watched production eval set, made the way a lead would have it: a rubric version approved and gating with a
judge config (its calibration's TPR and TNR intervals in the mark's figures), the production set's labeling queue
open under it, and outputs that arrive later."""

from __future__ import annotations

import itertools
from dataclasses import dataclass

from calibration.models import GatingMark
from evals.models import Criterion, EvalSet, Output, Role, RubricVersion, User, Workspace
from judging.models import JudgeConfig
from tests.factories import (
    default_workspace,
    make_eval_set,
    make_llm_judge,
    make_output,
    make_rubric_version,
    make_user,
    mark_as_gating,
    open_queue,
)

KEY = "correct_amount"
_replies = itertools.count(1)
# The calibration the mark relied on: TPR 0.90 [0.82, 0.95], TNR 0.80 [0.70, 0.87].
FIGURES = {"tpr": 0.9, "tpr_ci": [0.82, 0.95], "tnr": 0.8, "tnr_ci": [0.70, 0.87]}


@dataclass
class Watched:
    workspace: Workspace
    lead: User
    rubric_version: RubricVersion
    criterion: Criterion
    judge: JudgeConfig
    production: EvalSet


def watched_set(fake=None, workspace: Workspace | None = None, lead: User | None = None, slug: str = "") -> Watched:
    """`fake`: the fake LLM the judge calls (None: a judge pointing nowhere, for tests that write verdicts)."""
    ws = workspace or default_workspace()
    lead = lead or make_user(f"watch-lead{slug}", Role.LEAD, workspace=ws)
    rv = make_rubric_version(f"refund{slug}", workspace=ws)
    judge = make_llm_judge(fake, name=f"judge{slug}", workspace=ws)
    calibration = make_eval_set(f"cal{slug}", workspace=ws)
    mark_as_gating(rv, judge, [KEY], calibration, by=lead, min_pass_rate=0.8)
    GatingMark.objects.filter(rubric_version=rv).update(figures=FIGURES)
    production = make_eval_set(f"production{slug}", workspace=ws)
    open_queue(production, rv, lead)
    return Watched(ws, lead, rv, rv.criteria.get(key=KEY), judge, production)


def arrive(eval_set: EvalSet, n: int, response: str = "Your refund of $40.00 is on its way.") -> list[Output]:
    """n outputs arriving in production, in this order, each its own answer (the judge's cache answers none of them
    for another)."""
    return [make_output(eval_set, response=f"{response} (reply {next(_replies)})") for _ in range(n)]


def alarm_row(watch, *, save: bool = True, **changes):
    """A pass-rate alarm of `watch` as the update would store it (the fields the test names changed)."""
    from watch.models import WatchAlarm

    fields = {
        "what": "pass rate",
        "bound": 0.8,
        "estimate": 0.7,
        "lower": 0.62,
        "upper": 0.79,
        "at_labels": 100,
        "at_outputs": 200,
        "since_labels": 60,
        "since_outputs": 120,
        "evidence": 21.0,
        "advice": "look at the recent failures",
        "message": "The pass rate fell below 0.80: now about 0.70 (band 0.62 to 0.79). What to do: look.",
        **changes,
    }
    return WatchAlarm.objects.create(watch=watch, **fields) if save else WatchAlarm(watch=watch, **fields)
