"""Helpers of the workspace tests (issue 36): an answer about another workspace's object must be the same as
the answer about a missing one, byte for byte, once the per-render CSRF token is set aside."""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from api.models import GateToken, TokenScope, hash_token
from calibration.audits.plans import start_plan
from calibration.models import AuditPlan, AuditPlanGroup, GateResult, GatingMark
from calibration.stats.watch import WatchSettings, start_watch
from evals.models import Role, User, Workspace
from formats.models import ImportJob
from judging.models import JudgeRun, ProbeRun, Verdict
from labeling.audit_order import release_next
from labeling.models import Annotation
from tests.factories import (
    annotate,
    bulk_verdicts,
    make_eval_set,
    make_judge,
    make_rubric_version,
    make_user,
    make_workspace,
    mark_as_gating,
    open_queue,
)
from watch.models import Watch

KEY = "correct_amount"

# Django masks the CSRF token anew in every render: the one part of two identical pages that differs.
_CSRF = re.compile(rb'("X-CSRFToken": "|name="csrfmiddlewaretoken" value=")[^"]*"')


def unmasked(body: bytes) -> bytes:
    return _CSRF.sub(rb'\1"', body)


def same_answer(first, second) -> bool:
    """Two responses say the same: status, content type and body (CSRF tokens aside)."""
    return (
        first.status_code == second.status_code
        and first.get("Content-Type") == second.get("Content-Type")
        and unmasked(first.content) == unmasked(second.content)
    )


@dataclass
class World:
    workspace: Workspace
    people: dict[str, User]
    ids: dict[str, int] = field(default_factory=dict)
    token: str = ""
    scoped_tokens: dict[str, str] = field(default_factory=dict)
    only_name: str = ""


def build(slug: str) -> World:
    """A workspace `slug` with one of everything (the same names in every workspace) and `only-in-<slug>`."""
    ws = make_workspace(slug, f"{slug.title()} team")
    people = {
        role: make_user(f"{slug}-{role}", role, workspace=ws) for role in (Role.ANNOTATOR, Role.REVIEWER, Role.LEAD)
    }
    lead = people[Role.LEAD]
    lead.is_staff = True
    lead.save(update_fields=["is_staff"])
    rv = make_rubric_version("refund", workspace=ws)
    judge = make_judge("gpt-judge", workspace=ws)
    cal = make_eval_set("cal", workspace=ws)
    bulk_verdicts(cal, rv, judge, {KEY: {"PASS": 3, "FAIL": 2}})
    mark_as_gating(rv, judge, [KEY], cal, by=lead, min_pass_rate=0.5)
    candidate = make_eval_set("rc-1", workspace=ws)
    outputs = bulk_verdicts(candidate, rv, judge, {KEY: {"PASS": 20}})
    open_queue(candidate, rv, lead)
    criterion = rv.criteria.get(key=KEY)
    plan = start_plan(criterion=criterion, eval_set=candidate, judge_config=judge, by=lead, seed=7)
    release_next(order=plan.order, k=2)
    annotate(outputs[0], rv, people[Role.ANNOTATOR], 1, {KEY: "PASS"})
    run = JudgeRun.objects.filter(eval_set=candidate).first()
    result = GateResult.objects.create(
        workspace=ws,
        decision="passed",
        source="cli",
        eval_set_name="rc-1",
        rubric_ref=rv.ref,
        judge_name=judge.name,
        eval_set=candidate,
        rubric_version=rv,
        judge_config=judge,
    )
    world = World(ws, people, only_name=f"only-in-{slug}")
    make_eval_set(world.only_name, workspace=ws)
    secret = f"icw_{slug}_all_scopes_secret"
    token = GateToken.objects.create(
        workspace=ws,
        project="ci",
        rubric_version=rv,
        token_hash=hash_token(secret),
        hint=secret[:12],
        created_by=lead,
        scopes=[scope.value for scope in TokenScope],
    )
    world.token = secret
    for scope in TokenScope:
        one = f"icw_{slug}_{scope.value}_secret"
        GateToken.objects.create(
            workspace=ws,
            project=f"ci-{scope.value}",
            rubric_version=rv,
            token_hash=hash_token(one),
            hint=one[:12],
            created_by=lead,
            scopes=[scope.value],
        )
        world.scoped_tokens[scope.value] = one
    probe = ProbeRun.objects.create(eval_set=candidate, rubric_version=rv, judge_config=judge, started_by=lead)
    job = ImportJob.objects.create(workspace=ws, kind="cases", file_name="cases.jsonl", size=1, created_by=lead)
    watch = watch_row(candidate, criterion, judge, lead)
    # The plan as an audit group of its one criterion (issue 37 item 3), so that the groups' pages and API are asked.
    group = AuditPlanGroup.objects.create(
        eval_set=candidate, judge_config=judge, k=1, confidence=0.95, alpha_pass=0.025,
        alpha_fail=0.025, created_by=lead,
    )  # fmt: skip
    AuditPlan.objects.filter(pk=plan.pk).update(group=group)
    world.ids = {
        "eval_set": candidate.pk,
        "rubric_version": rv.pk,
        "judge": judge.pk,
        "config": judge.pk,
        "run": run.pk,
        "verdict": Verdict.objects.filter(run=run).first().pk,
        "probe_run": probe.pk,
        "mark": GatingMark.objects.get(rubric_version=rv).pk,
        "result": result.pk,
        "plan": plan.pk,
        "token": token.pk,
        "output": outputs[0].pk,
        "criterion": criterion.pk,
        "annotation": Annotation.objects.filter(annotator=people[Role.ANNOTATOR]).first().pk,
        "import_job": job.pk,
        "watch": watch.pk,
        "group": group.pk,
    }
    return world


def watch_row(eval_set, criterion, judge, lead) -> Watch:
    """A watch written directly (the world's judge holds imported verdicts, which no watch could start with)."""
    settings = WatchSettings(minimum=0.5, audit_share=0.1, tpr_lower=0.8, tnr_lower=0.7)
    return Watch.objects.create(
        eval_set=eval_set,
        rubric_version=criterion.rubric_version,
        criterion=criterion,
        judge_config=judge,
        minimum=0.5,
        minimum_source="tests",
        audit_share=0.1,
        alpha=0.05,
        tpr_lower=0.8,
        tnr_lower=0.7,
        bounds_source="tests",
        started_by=lead,
        state=start_watch(settings).to_json(),
    )
