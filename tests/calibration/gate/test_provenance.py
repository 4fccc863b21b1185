"""Verdict provenance: verdicts of a model or instrument judge config come only from its own judge runs; imports
and pushes write only into `imported` configs, a push token names the ones it may write, and every gate result
says where the verdicts it decided on came from."""

from __future__ import annotations

import io
import json
from html import unescape

import pytest
from django.core.management import CommandError, call_command
from django.urls import reverse

from api.models import GateToken, VerdictPush
from calibration.gate.release_gate import gate_and_record
from calibration.gate.request import GateRequest
from calibration.models import GateResult
from calibration.stats.policy import Tightening
from judging.checks import imported_verdicts_of_run_configs
from judging.models import JudgeConfig, JudgeRun, Verdict
from tests.api_helpers import call, create_token
from tests.factories import (
    add_verdict,
    bulk_verdicts,
    make_eval_set,
    make_judge,
    make_output,
    make_rubric_version,
    mark_as_gating,
)
from tests.io_helpers import jsonl

pytestmark = pytest.mark.django_db

INSTRUMENTS = {"correct_amount": {"kind": "reference_values_contained", "pattern": r"\$\d+\.\d{2}"}}
RUDE = "No refund. Go away."


@pytest.fixture
def calibrated(lead):
    """An instrument config the lead calibrated and marked gating, as demo-instruments is after the walk."""
    rv = make_rubric_version("refund", "1")
    inst = make_judge("demo-instruments", model_id="", backend="instrument", instruments=INSTRUMENTS)
    # The mark relied on a perfect calibration (40 true passes, 10 true fails): the corrected bound decides.
    mark_as_gating(rv, inst, ["correct_amount"], make_eval_set("cal"), by=lead, calibration=(40, 0, 0, 10))
    return rv, inst


def rude_outputs(n: int) -> list[dict]:
    return [{"case_id": f"rc-{i:03d}", "agent_version": "v9", "input": "Refund?", "response": RUDE} for i in range(n)]


def passes_for(outputs: list[dict], key: str = "correct_amount") -> list[dict]:
    return [
        {"case_id": o["case_id"], "agent_version": "v9", "criterion": key, "outcome": "PASS", "evidence": "", "raw": ""}
        for o in outputs
    ]


def three_rude_outputs_and_their_passes(folder) -> object:
    """Three rude outputs in eval set rc-9 and a verdict file passing them all on correct_amount: its path."""
    es = make_eval_set("rc-9")
    outputs = rude_outputs(3)
    for o in outputs:
        make_output(es, case_id=o["case_id"], agent_version="v9", response=RUDE)
    path = folder / "passes.jsonl"
    path.write_text(jsonl(*passes_for(outputs)))
    return path


GATE_ASK = {"eval_set": "rc-9", "rubric": "refund@1", "judge": "demo-instruments"}
PUSH_QUERY = {"eval_set": "rc-9", "rubric": "refund@1", "judge": "demo-instruments"}


def test_a_push_token_cannot_write_pass_verdicts_of_a_calibrated_instrument_config(client, lead, calibrated):
    """The attack of issue 20: 600 PASS verdicts pushed under the instrument's name for 600 rude outputs."""
    rv, inst = calibrated
    push = create_token(client, lead, ["push"], rv)
    gate = create_token(client, lead, ["gate"], rv)
    outputs = rude_outputs(600)
    assert call(client, "POST", "/api/outputs", push, {"records": outputs}, eval_set="rc-9").status_code == 201
    pushed = call(client, "POST", "/api/verdicts", push, {"records": passes_for(outputs)}, **PUSH_QUERY)
    assert pushed.status_code == 403
    assert "demo-instruments" in pushed.json()["error"]
    assert not Verdict.objects.exists() and not JudgeRun.objects.exists()
    answer = call(client, "POST", "/api/gate", gate, GATE_ASK)
    assert answer.status_code == 409 and answer.json()["passed"] is None
    assert GateResult.objects.get().decision == "undecided"


def test_the_same_attack_from_the_command_line_is_refused_and_a_new_name_is_the_way(tmp_path, calibrated):
    rv, inst = calibrated
    path = three_rude_outputs_and_their_passes(tmp_path)
    scope = ("--eval-set", "rc-9", "--rubric", "refund@1")
    with pytest.raises(CommandError) as refused:
        call_command("import_verdicts", *scope, "--judge", "demo-instruments", str(path), stdout=io.StringIO())
    assert 'judge config "demo-instruments" is a Deterministic instruments (no model) config' in str(refused.value)
    assert "its verdicts come only from its own judge runs" in str(refused.value)
    assert not Verdict.objects.exists() and not JudgeRun.objects.exists()
    # The negative control: under a new name the file goes in, as a config of its own that nothing gates on yet.
    call_command("import_verdicts", *scope, "--judge", "elsewhere", str(path), stdout=io.StringIO())
    run = JudgeRun.objects.get()
    assert run.judge_config.backend == "imported" and run.imported_via == "command" and run.source_name == str(path)
    assert Verdict.objects.filter(judge_config__name="elsewhere").count() == 3


def test_inspect_scores_cannot_go_into_a_config_that_runs_either(calibrated, refund_logs, offline):
    make_eval_set("rc-9")
    scope = ("--eval-set", "rc-9", "--rubric", "refund@1", "--judge", "demo-instruments")
    with pytest.raises(CommandError, match="its verdicts come only from its own judge runs"):
        call_command("import_verdicts", *scope, "--scorer", "model_graded_qa=correct_amount", str(refund_logs["eval"]))
    assert not Verdict.objects.exists() and not JudgeRun.objects.exists()


def test_a_lead_names_only_imported_configs_on_a_push_token(client, lead, calibrated):
    rv, inst = calibrated
    make_judge("inspect-scores")  # an imported config (the factory's default backend)
    client.force_login(lead)
    base = {"project": "ci", "rubric_version": rv.pk, "eval_set_pattern": "*", "scopes": ["push"]}
    page = client.post(reverse("calibration:create_token"), {**base, "judges": "inspect-scores\ndemo-instruments"})
    assert page.status_code == 422
    assert "demo-instruments (Deterministic instruments (no model)): a model or instrument config" in unescape(
        page.content.decode()
    )
    no_push = client.post(reverse("calibration:create_token"), {**base, "scopes": ["gate"], "judges": "x"})
    assert no_push.status_code == 422 and "Only a token with the push scope pushes verdicts" in no_push.content.decode()
    assert not GateToken.objects.exists()
    made = client.post(reverse("calibration:create_token"), {**base, "judges": " inspect-scores \n\nnew-ci\nnew-ci"})
    assert made.status_code == 200 and GateToken.objects.get().judges == ["inspect-scores", "new-ci"]
    assert "verdicts into inspect-scores, new-ci" in client.get(reverse("calibration:gates")).content.decode()


def test_a_push_token_writes_only_the_imported_configs_it_names_and_the_run_keeps_the_token(client, lead, calibrated):
    rv, inst = calibrated
    push = create_token(client, lead, ["push"], rv, project="nightly", judges=("ci-judge",))
    outputs = rude_outputs(2)
    assert call(client, "POST", "/api/outputs", push, {"records": outputs}, eval_set="rc-9").status_code == 201
    query = {**PUSH_QUERY, "judge": "ci-judge"}
    other = call(client, "POST", "/api/verdicts", push, {"records": passes_for(outputs)}, **{**query, "judge": "x"})
    assert other.status_code == 403 and other.json()["error"].startswith(
        "this token may push verdicts only into 'ci-judge'"
    )
    pushed = call(client, "POST", "/api/verdicts", push, {"records": passes_for(outputs)}, **query)
    assert pushed.status_code == 201
    run = JudgeRun.objects.get()
    assert run.judge_config.backend == "imported" and run.imported_via == "push" and run.source_name == "records"
    assert VerdictPush.objects.get().run == run and run.push.token.project == "nightly"
    again = call(client, "POST", "/api/verdicts", push, {"records": passes_for(outputs)}, **query)
    assert again.status_code == 200 and VerdictPush.objects.count() == 1  # nothing new: no new run, no new record


def test_a_name_on_a_token_that_later_became_a_config_that_runs_is_refused_at_push_time(client, lead, calibrated):
    rv, inst = calibrated
    push = create_token(client, lead, ["push"], rv, judges=("ci-judge",))
    make_judge("ci-judge", model_id="", backend="instrument", instruments=INSTRUMENTS)  # made after the token
    outputs = rude_outputs(2)
    call(client, "POST", "/api/outputs", push, {"records": outputs}, eval_set="rc-9")
    pushed = call(
        client, "POST", "/api/verdicts", push, {"records": passes_for(outputs)}, **{**PUSH_QUERY, "judge": "ci-judge"}
    )
    assert pushed.status_code == 400 and "its verdicts come only from its own judge runs" in json.dumps(pushed.json())
    assert not Verdict.objects.exists() and not JudgeRun.objects.exists() and not VerdictPush.objects.exists()


# -- the gate says where its verdicts came from --------------------------------------------------------------


@pytest.fixture
def imported_gate(client, lead):
    """An imported config the lead calibrated and marked gating; CI pushes its verdicts on each release candidate."""
    rv = make_rubric_version("refund", "1")
    grader = make_judge("inspect-grader")
    mark_as_gating(rv, grader, ["correct_amount"], make_eval_set("cal"), by=lead, calibration=(40, 0, 0, 10))
    push = create_token(client, lead, ["push"], rv, project="nightly", judges=("inspect-grader",))
    gate = create_token(client, lead, ["gate"], rv, project="release")
    outputs = rude_outputs(30)
    call(client, "POST", "/api/outputs", push, {"records": outputs}, eval_set="rc-9")
    query = {**PUSH_QUERY, "judge": "inspect-grader"}
    assert call(client, "POST", "/api/verdicts", push, {"records": passes_for(outputs)}, **query).status_code == 201
    return gate, JudgeRun.objects.get(judge_config=grader), GateToken.objects.get(project="nightly")


def test_every_way_of_asking_the_gate_shows_the_push_and_its_token(client, lead, imported_gate):
    gate, run, token = imported_gate
    expected = {
        "run": run.pk,
        "origin": "push",
        "verdicts": 30,
        "mode": "import",
        "label": "",
        "file": "records",
        "finished_at": run.finished_at.isoformat(),
        "token": {"id": token.pk, "project": "nightly"},
    }
    ask = {**GATE_ASK, "judge": "inspect-grader"}
    for path in ("/api/gate", "/calibration/api/gate"):
        answer = call(client, "POST", path, gate, ask)
        assert answer.status_code == 200 and answer.json()["provenance"] == [expected]
    out = io.StringIO()
    with pytest.raises(SystemExit) as exit_code:
        call_command(
            "gate",
            "--eval-set",
            "rc-9",
            "--rubric",
            "refund@1",
            "--judge",
            "inspect-grader",
            "--format",
            "json",
            stdout=out,
        )
    assert exit_code.value.code in (0, 1) and json.loads(out.getvalue())["provenance"] == [expected]
    assert all(r.result["provenance"] == [expected] for r in GateResult.objects.all())
    client.force_login(lead)
    record = GateResult.objects.first()
    page = client.get(reverse("calibration:gate_result", args=[record.pk])).content.decode()
    assert f"run {run.pk}</a>" in page and "pushed over the API</strong> with token “nightly”" in page
    listing = client.get(reverse("calibration:gates")).content.decode()
    assert f"token “nightly” (id {token.pk})" in listing


def test_a_passing_gate_on_a_config_that_runs_names_its_own_run(lead):
    rv = make_rubric_version("refund", "1")
    inst = make_judge("demo-instruments", model_id="", backend="instrument", instruments=INSTRUMENTS)
    mark_as_gating(rv, inst, ["correct_amount"], make_eval_set("cal"), by=lead)
    bulk_verdicts(make_eval_set("rc-1"), rv, inst, {"correct_amount": {"PASS": 50}})
    run = JudgeRun.objects.get()
    out = io.StringIO()
    call_command("gate", "--eval-set", "rc-1", "--rubric", "refund@1", "--judge", "demo-instruments", stdout=out)
    assert f"verdicts from: run {run.pk} (judge run, on celery workers): 50" in out.getvalue()
    assert [s["origin"] for s in GateResult.objects.get().result["provenance"]] == ["judge_run"]


def test_an_old_database_with_imports_into_a_config_that_runs_is_listed_and_cannot_pass(lead, calibrated):
    """Data from before the rule: the check lists it, and the gate will not decide on it until a run supersedes it."""
    rv, inst = calibrated
    es = make_eval_set("rc-9")
    outputs = [make_output(es, case_id=f"rc-{i}", response=RUDE) for i in range(3)]
    legacy = JudgeRun.objects.create(
        eval_set=es,
        rubric_version=rv,
        judge_config=inst,
        status="done",
        mode="import",  # as old imports were made
    )
    for o in outputs:
        add_verdict(legacy, o, "correct_amount", "PASS")
    warnings = imported_verdicts_of_run_configs(databases=["default"])
    assert [w.id for w in warnings] == ["judging.W001"]
    assert f"'demo-instruments' (instrument) holds 3 imported verdicts in 1 run: run {legacy.pk} (3)" in warnings[0].msg
    ask = GateRequest("rc-9", "refund@1", "demo-instruments", None, Tightening())
    refused = gate_and_record(ask, workspace=es.workspace, source=GateResult.Source.CLI)
    assert refused.decision is None and "3 of the verdicts to decide on came into judge config demo-instruments" in (
        refused.reason
    )
    assert f"run {legacy.pk} (imported, how not recorded): 3" in refused.reason
    # The instrument's own newer run supersedes them item by item: the gate decides again, on that run only.
    own = JudgeRun.objects.create(eval_set=es, rubric_version=rv, judge_config=inst, status="done", mode="in_process")
    for o in outputs:
        add_verdict(own, o, "correct_amount", "FAIL")
    decided = gate_and_record(ask, workspace=es.workspace, source=GateResult.Source.CLI)
    assert decided.decision is not None and decided.decision.passed is False
    assert [(s.run, s.origin) for s in decided.decision.provenance] == [(own.pk, "judge_run")]
    # The check still lists the old run (it is still stored), and never an imported config's imports.
    assert len(imported_verdicts_of_run_configs(databases=["default"])) == 1
    JudgeRun.objects.filter(pk=legacy.pk).update(judge_config=make_judge("elsewhere"))
    Verdict.objects.filter(run=legacy).update(judge_config=JudgeConfig.objects.get(name="elsewhere"))
    assert imported_verdicts_of_run_configs(databases=["default"]) == []


def test_the_gate_names_an_imported_files_name_never_its_server_path(tmp_path, lead):
    # Issue 40: the text answer printed "imported with manage.py import_verdicts, /abs/path/passes.jsonl" (the path
    # stays stored on the run, for the admin; a CI log gets the name).
    rv = make_rubric_version("refund", "1")
    path = three_rude_outputs_and_their_passes(tmp_path)
    call_command("import_verdicts", "--eval-set", "rc-9", "--rubric", "refund@1", "--judge", "elsewhere", str(path))
    run = JudgeRun.objects.get()
    assert run.source_name == str(path)  # the negative control: what was printed before is a server path
    mark_as_gating(rv, JudgeConfig.objects.get(name="elsewhere"), ["correct_amount"], make_eval_set("cal"), by=lead)
    out = io.StringIO()
    with pytest.raises(SystemExit):
        call_command("gate", "--eval-set", "rc-9", "--rubric", "refund@1", "--judge", "elsewhere", stdout=out)
    text = out.getvalue()
    assert f"verdicts from: run {run.pk} (imported with manage.py import_verdicts, passes.jsonl): 3" in text
    assert str(tmp_path) not in text
    assert GateResult.objects.get().result["provenance"][0]["file"] == "passes.jsonl"
