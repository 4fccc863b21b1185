"""Workspaces and the API (issue 36): a token belongs to one workspace and reaches nothing outside it.

Two teams, A and B, each with an eval set `rc-1`, a rubric `refund@1` and a judge `gpt-judge` of the same names (A's
judge passes every output, B's fails every one), and B with names and ids of its own. Every operation of
/api/openapi.json, called with A's token on B's names and ids, must answer exactly as on names and ids that exist
nowhere (same status, same body but for the name or id asked about); same names answer with A's own objects; a push
writes only into A.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

import pytest

from api.models import GateToken
from calibration.audits.plans import start_plan
from calibration.models import AuditPlan, AuditPlanGroup, GateResult
from evals.models import EvalSet, Output, Role, RubricVersion, Workspace
from judging.models import JudgeConfig, JudgeRun, Verdict
from tests.api_helpers import call, create_token
from tests.factories import (
    bulk_verdicts,
    default_workspace,
    make_eval_set,
    make_judge,
    make_output,
    make_rubric_version,
    make_user,
    make_workspace,
    mark_as_gating,
    open_queue,
)
from tests.io_helpers import jsonl
from tests.workspace_helpers import watch_row
from watch.models import Watch

pytestmark = pytest.mark.django_db

KEY = "correct_amount"
SCOPES = ["gate", "push", "judge", "report", "audit", "guidance"]
# Names that exist only in B, and names that exist nowhere: A's token must not tell them apart.
B_ONLY = {"eval_set": "rc-b-only", "judge": "b-only-judge"}
NOWHERE = {"eval_set": "rc-nowhere", "judge": "nowhere-judge"}
# The token may push verdicts into these imported judge configs (of its own workspace; made by a first push).
PUSH_JUDGES = ("b-only-judge", "nowhere-judge", "gpt-judge-imported")


@dataclass
class Team:
    workspace: Workspace
    lead: object
    rubric_version: RubricVersion
    judge: JudgeConfig
    rc: EvalSet
    output: Output
    run: JudgeRun


def team(workspace: Workspace, lead_name: str, judge_says: str) -> Team:
    lead = make_user(lead_name, Role.LEAD, workspace=workspace)
    rv = make_rubric_version("refund", "1", workspace=workspace)
    # A model judge (its verdicts written here directly), so that guidance may be derived from it.
    judge = make_judge("gpt-judge", workspace=workspace, backend=JudgeConfig.Backend.OPENAI)
    mark_as_gating(rv, judge, [KEY], make_eval_set("cal", workspace), by=lead, min_pass_rate=0.5)
    rc = make_eval_set("rc-1", workspace)
    bulk_verdicts(rc, rv, judge, {KEY: {judge_says: 40}})
    output = make_output(rc, case_id="r-001", agent_version="v2")
    open_queue(rc, rv, lead)
    return Team(workspace, lead, rv, judge, rc, output, JudgeRun.objects.get(eval_set=rc))


@dataclass
class World:
    a: Team
    b: Team
    token: str
    b_plan: AuditPlan
    b_watch: Watch
    b_group: AuditPlanGroup


@pytest.fixture
def world(client) -> World:
    a = team(default_workspace(), "lead-a", "PASS")
    b = team(make_workspace("team-b"), "lead-b", "FAIL")
    make_eval_set(B_ONLY["eval_set"], b.workspace)
    make_judge(B_ONLY["judge"], workspace=b.workspace, backend=JudgeConfig.Backend.OPENAI)
    make_judge("gpt-judge-imported", workspace=b.workspace, backend=JudgeConfig.Backend.IMPORTED)
    b_plan = start_plan(
        criterion=b.rubric_version.criteria.get(key=KEY), eval_set=b.rc, judge_config=b.judge, by=b.lead, seed=7
    )
    token = create_token(client, a.lead, SCOPES, a.rubric_version, judges=PUSH_JUDGES)
    b_watch = watch_row(b.rc, b.rubric_version.criteria.get(key=KEY), b.judge, b.lead)
    # B's plan as an audit group of its one criterion (issue 37 item 3): its id is asked about too.
    b_group = AuditPlanGroup.objects.create(
        eval_set=b.rc, judge_config=b.judge, k=1, confidence=0.95, alpha_pass=0.025, alpha_fail=0.025, created_by=b.lead
    )
    AuditPlan.objects.filter(pk=b_plan.pk).update(group=b_group)
    return World(a, b, token, b_plan, b_watch, b_group)


def missing_id(model) -> int:
    return (model.objects.order_by("-pk").values_list("pk", flat=True).first() or 0) + 1000


VERDICT = {"case_id": "r-001", "agent_version": "v2", "criterion": KEY, "outcome": "PASS", "raw": ""}


def guidance_body(judge: str, output_id: int) -> dict:
    example = {"output_id": output_id, "input": "question", "response": "answer", "outcome": "PASS", "quote": "answer"}
    return {"judge": judge, "rubric": "refund@1", "criteria": {KEY: {"instructions": "", "examples": [example]}}}


# Each operation as a call on the names and ids it is given: (method, path, body, content type, query).
def _calls(n: dict) -> dict:
    names = {"eval_set": n["eval_set"], "rubric": "refund@1", "judge": n["judge"]}
    pushed_into = {**names, "judge": "gpt-judge-imported" if n["judge"] == "gpt-judge" else n["judge"]}
    return {
        ("GET", "/api/audit-plans"): ("GET", "/api/audit-plans", None, None, {"eval_set": n["eval_set"]}),
        ("GET", "/api/audit-plans/{plan_id}"): ("GET", f"/api/audit-plans/{n['plan_id']}", None, None, {}),
        ("POST", "/api/audit-plans"): ("POST", "/api/audit-plans", {**names, "criterion": KEY}, None, {}),
        ("GET", "/api/audit-plan-groups/{group_id}"): (
            "GET",
            f"/api/audit-plan-groups/{n['group_id']}",
            None,
            None,
            {},
        ),
        ("POST", "/api/audit-plan-groups"): ("POST", "/api/audit-plan-groups", {**names, "criteria": [KEY]}, None, {}),
        ("POST", "/api/audit-plans/{plan_id}/close"): ("POST", f"/api/audit-plans/{n['plan_id']}/close", {}, None, {}),
        ("POST", "/api/audit-plans/{plan_id}/next"): (
            "POST",
            f"/api/audit-plans/{n['plan_id']}/next",
            {"k": 5},
            None,
            {},
        ),
        ("GET", "/api/calibration-report"): ("GET", "/api/calibration-report", None, None, names),
        ("POST", "/api/gate"): ("POST", "/api/gate", names, None, {}),
        ("GET", "/api/gold-split"): (
            "GET",
            "/api/gold-split",
            None,
            None,
            {"eval_set": n["eval_set"], "rubric": "refund@1"},
        ),
        ("GET", "/api/judge-guidance"): ("GET", "/api/judge-guidance", None, None, {"judge": n["judge"]}),
        ("POST", "/api/judge-guidance"): (
            "POST",
            "/api/judge-guidance",
            guidance_body(n["judge"], n["output_id"]),
            None,
            {},
        ),
        ("POST", "/api/judge-runs"): ("POST", "/api/judge-runs", names, None, {}),
        ("GET", "/api/judge-runs/{run_id}"): ("GET", f"/api/judge-runs/{n['run_id']}", None, None, {}),
        ("POST", "/api/outputs"): (
            "POST",
            "/api/outputs",
            jsonl({"case_id": "new-1", "input": "question", "response": "answer"}),
            "application/x-ndjson",
            {"eval_set": n["eval_set"]},
        ),
        # Verdicts are pushed into an imported judge config the token names (A's gpt-judge runs: it takes none).
        ("POST", "/api/verdicts"): ("POST", "/api/verdicts", jsonl(VERDICT), "application/x-ndjson", pushed_into),
        ("GET", "/api/watches"): ("GET", "/api/watches", None, None, {}),
        ("GET", "/api/watches/{watch_id}"): ("GET", f"/api/watches/{n['watch_id']}", None, None, {}),
        ("POST", "/api/watches"): ("POST", "/api/watches", {**names, "criterion": KEY, "audit_share": 0.1}, None, {}),
        ("POST", "/api/watches/{watch_id}/stop"): ("POST", f"/api/watches/{n['watch_id']}/stop", {}, None, {}),
    }


# Which of B's names and ids each operation is asked about (the rubric is always the token's own: another one is
# refused by the token's scope, 403, before any lookup).
ASKED = {
    ("GET", "/api/audit-plans"): ["eval_set"],
    ("GET", "/api/audit-plans/{plan_id}"): ["plan_id"],
    ("POST", "/api/audit-plans"): ["eval_set", "judge"],
    ("GET", "/api/audit-plan-groups/{group_id}"): ["group_id"],
    ("POST", "/api/audit-plan-groups"): ["eval_set", "judge"],
    ("POST", "/api/audit-plans/{plan_id}/close"): ["plan_id"],
    ("POST", "/api/audit-plans/{plan_id}/next"): ["plan_id"],
    ("GET", "/api/calibration-report"): ["eval_set", "judge"],
    ("POST", "/api/gate"): ["eval_set", "judge"],
    ("GET", "/api/gold-split"): ["eval_set"],
    ("GET", "/api/judge-guidance"): ["judge"],
    ("POST", "/api/judge-guidance"): ["judge", "output_id"],
    ("POST", "/api/judge-runs"): ["eval_set", "judge"],
    ("GET", "/api/judge-runs/{run_id}"): ["run_id"],
    ("POST", "/api/outputs"): ["eval_set"],
    ("POST", "/api/verdicts"): ["eval_set", "judge"],
    ("GET", "/api/watches"): [],  # no name or id asked: the token's workspace only (tests/watch/test_watch_access.py)
    ("GET", "/api/watches/{watch_id}"): ["watch_id"],
    ("POST", "/api/watches"): ["eval_set", "judge"],
    ("POST", "/api/watches/{watch_id}/stop"): ["watch_id"],
}
CASES = [(op, key) for op, keys in ASKED.items() for key in keys]


def ask(client, token: str, op, n: dict):
    method, path, body, content_type, query = _calls(n)[op]
    return call(client, method, path, token, body, content_type or "application/json", **query)


def a_names(w: World) -> dict:
    """A's own names and ids: what every call is about, but for the one name or id under test."""
    return {
        "eval_set": "rc-1",
        "judge": "gpt-judge",
        "plan_id": missing_id(AuditPlan),
        "group_id": missing_id(AuditPlanGroup),
        "watch_id": missing_id(Watch),
        "run_id": w.a.run.pk,
        "output_id": w.a.output.pk,
    }


def b_value(w: World, key: str):
    ids = {
        "plan_id": w.b_plan.pk,
        "group_id": w.b_group.pk,
        "run_id": w.b.run.pk,
        "output_id": w.b.output.pk,
        "watch_id": w.b_watch.pk,
    }
    return ids.get(key) or B_ONLY[key]


def nowhere_value(key: str, model_of: dict):
    return missing_id(model_of[key]) if key in model_of else NOWHERE[key]


def but_for(text: str, asked, instead) -> str:
    """`text` with the name or id asked about written as the other one (an id only where it is a whole number)."""
    pattern = rf"(?<![\w-]){re.escape(str(asked))}(?![\w-])"
    return re.sub(pattern, str(instead), text)


def as_made(response) -> str:
    """The body, with the id of a run a push made written RUN: two pushes make two runs, the one thing that differs."""
    text = response.content.decode()
    made = response.json().get("counts", {}).get("run") if response.status_code == 201 else None
    return text if made is None else but_for(text, made, "RUN")


def test_the_matrix_covers_every_operation_of_the_schema(client):
    schema = client.get("/api/openapi.json").json()
    operations = {(m.upper(), p) for p, ops in schema["paths"].items() for m in ops}
    assert operations == set(ASKED)


@pytest.mark.parametrize("op,key", CASES, ids=[f"{m} {p} {k}" for (m, p), k in CASES])
def test_another_workspaces_name_or_id_answers_as_a_missing_one(client, world, op, key):
    ids = {"plan_id": AuditPlan, "group_id": AuditPlanGroup, "run_id": JudgeRun, "output_id": Output, "watch_id": Watch}
    foreign, missing = b_value(world, key), nowhere_value(key, ids)
    b_before = _b_state(world)
    asked_foreign = ask(client, world.token, op, {**a_names(world), key: foreign})
    asked_missing = ask(client, world.token, op, {**a_names(world), key: missing})
    assert asked_foreign.status_code == asked_missing.status_code, (asked_foreign.content, asked_missing.content)
    # The call got past the token's checks to the lookup itself (a scope refusal would be equal, and prove nothing).
    assert asked_missing.status_code not in (401, 403), asked_missing.content
    assert asked_foreign["Content-Type"] == asked_missing["Content-Type"]
    assert but_for(as_made(asked_foreign), foreign, missing) == as_made(asked_missing)
    # Nothing of B was read into the answer, nor written.
    for b_name in ("team-b", "lead-b", "rc-b-only"):
        assert b_name not in asked_missing.content.decode()
    assert _b_state(world) == b_before


def _b_state(w: World) -> tuple:
    b = w.b.workspace
    return (
        list(EvalSet.objects.filter(workspace=b).order_by("pk").values_list("pk", "name")),
        list(JudgeConfig.objects.filter(workspace=b).order_by("pk").values_list("pk", "name", "backend")),
        Output.objects.filter(case__eval_set__workspace=b).count(),
        Verdict.objects.filter(run__eval_set__workspace=b).count(),
        JudgeRun.objects.filter(eval_set__workspace=b).count(),
        list(AuditPlan.objects.filter(eval_set__workspace=b).values_list("pk", "closed_at")),
        list(AuditPlanGroup.objects.filter(eval_set__workspace=b).values_list("pk", "closed_at")),
        GateResult.objects.filter(workspace=b).count(),
    )


def test_a_negative_control_tells_an_existing_object_from_a_missing_one(client, world):
    """The comparison above would see an answer that reads the object: A's own run is not answered as missing."""
    own = ask(client, world.token, ("GET", "/api/judge-runs/{run_id}"), a_names(world))
    missing = ask(client, world.token, ("GET", "/api/judge-runs/{run_id}"), {**a_names(world), "run_id": 10**6})
    assert own.status_code == 200 and missing.status_code == 404
    assert but_for(own.content.decode(), world.a.run.pk, 10**6) != missing.content.decode()


def test_same_names_answer_with_the_tokens_own_workspace(client, world):
    """A's judge passes all 40 outputs and B's fails them: the report and the gate read A's, with A's policy."""
    names = {"eval_set": "rc-1", "rubric": "refund@1", "judge": "gpt-judge"}
    report = call(client, "GET", "/api/calibration-report", world.token, **names)
    assert report.status_code == 200, report.json()
    # The candidate's 40 judged outputs are version "default" (r-001, version v2, is there for the pushes).
    gate = call(client, "POST", "/api/gate", world.token, {**names, "agent_version": "default"})
    assert gate.status_code == 200 and gate.json()["passed"] is True, gate.json()
    assert gate.json()["criteria"][0]["passes"] == 40 and gate.json()["criteria"][0]["min_pass_rate"] == 0.5
    recorded = GateResult.objects.get()
    assert recorded.workspace == world.a.workspace and recorded.eval_set_id == world.a.rc.pk
    run = call(client, "GET", f"/api/judge-runs/{world.a.run.pk}", world.token)
    assert run.status_code == 200 and run.json()["outcomes"] == {"PASS": 40}


def test_the_gate_on_names_that_exist_only_in_b_is_unknown_and_lists_no_names(client, world):
    for change, error in (
        ({"eval_set": "rc-b-only"}, "unknown eval set 'rc-b-only'"),
        ({"judge": "b-only-judge"}, "unknown judge config 'b-only-judge'"),
    ):
        response = call(
            client,
            "POST",
            "/api/gate",
            world.token,
            {"eval_set": "rc-1", "rubric": "refund@1", "judge": "gpt-judge", **change},
        )
        assert response.status_code == 404
        assert response.json() == {"error": error, "problems": [], "passed": None}
    assert set(GateResult.objects.values_list("workspace__slug", flat=True)) == {"default"}


def test_an_example_from_another_workspaces_output_is_refused_as_a_missing_output(client, world):
    """The matrix's derive case reaches the output itself: B's output id is "no output", as a missing one is."""
    derived = call(client, "POST", "/api/judge-guidance", world.token, guidance_body("gpt-judge", world.b.output.pk))
    assert derived.status_code == 400
    assert f"there is no output {world.b.output.pk}" in derived.json()["error"]
    assert JudgeConfig.objects.filter(workspace=world.a.workspace, name__startswith="gpt-judge-v").count() == 0


def test_a_push_writes_only_into_the_tokens_workspace(client, world):
    """Same eval set name and case id in both: the push writes A's output; a judge name of B makes A's own."""
    body = jsonl({**VERDICT, "outcome": "FAIL"})
    query = {"eval_set": "rc-1", "rubric": "refund@1", "judge": "gpt-judge-imported"}
    pushed = call(client, "POST", "/api/verdicts", world.token, body, "application/x-ndjson", **query)
    assert pushed.status_code == 201, pushed.json()
    made = JudgeConfig.objects.get(name="gpt-judge-imported", workspace=world.a.workspace)
    assert made.backend == JudgeConfig.Backend.IMPORTED
    assert list(Verdict.objects.filter(run__judge_config=made).values_list("output_id", flat=True)) == [
        world.a.output.pk
    ]
    b_imported = JudgeConfig.objects.get(name="gpt-judge-imported", workspace=world.b.workspace)
    assert not JudgeRun.objects.filter(judge_config=b_imported).exists()
    new = jsonl({"case_id": "new-1", "input": "question", "response": "answer"})
    created = call(client, "POST", "/api/outputs", world.token, new, "application/x-ndjson", eval_set="rc-b-only")
    assert created.status_code == 201, created.json()
    assert EvalSet.objects.get(name="rc-b-only", workspace=world.a.workspace).cases.count() == 1
    assert not EvalSet.objects.get(name="rc-b-only", workspace=world.b.workspace).cases.exists()


def test_guidance_and_audit_tokens_act_only_while_their_maker_leads_the_tokens_workspace(client, world):
    """lead-a made the token; made a lead of B and an annotator of A, the token no longer acts for them."""
    from tests.factories import set_role

    names = {"eval_set": "rc-1", "rubric": "refund@1", "judge": "gpt-judge", "criterion": KEY}
    set_role(world.a.lead, Role.LEAD, world.b.workspace)
    set_role(world.a.lead, Role.ANNOTATOR, world.a.workspace)
    refused = call(client, "POST", "/api/audit-plans", world.token, names)
    assert refused.status_code == 403 and "no longer a lead" in refused.json()["error"]
    derive = call(client, "POST", "/api/judge-guidance", world.token, guidance_body("gpt-judge", world.a.output.pk))
    assert derive.status_code == 403 and "no longer an active lead" in derive.json()["error"]
    set_role(world.a.lead, Role.LEAD, world.a.workspace)  # the negative control: a lead of A again
    assert call(client, "POST", "/api/audit-plans", world.token, names).status_code == 201


def test_a_token_of_b_sees_b_and_not_a(client, world):
    """The other way round, with B's own token: the same names now answer with B's objects (its judge fails all)."""
    b_token = create_token(client, world.b.lead, ["gate"], world.b.rubric_version, workspace=world.b.workspace)
    assert GateToken.objects.get(created_by=world.b.lead).workspace == world.b.workspace
    names = {"eval_set": "rc-1", "rubric": "refund@1", "judge": "gpt-judge", "agent_version": "default"}
    gate = call(client, "POST", "/api/gate", b_token, names)
    assert gate.status_code == 200 and gate.json()["passed"] is False, gate.json()
