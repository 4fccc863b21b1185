"""`--workspace SLUG` on every management command that names an eval set, rubric, judge config, plan or token
(issue 36): an unknown or ambiguous workspace is a one-line error naming the choices and changes nothing; a name
of another workspace is unknown, and the message lists only the chosen workspace's names; two workspaces each
import a rubric, an eval set and a judge config of the same name.

The commands live in five apps; this is their one matrix (tests/<app>/ hold each command's own behaviour).
"""

from __future__ import annotations

import json
from io import StringIO
from pathlib import Path

import pytest
from django.core.management import CommandError, call_command

from calibration.models import AuditPlan, GateResult
from evals.models import EvalSet, Role, Rubric, RubricVersion, Workspace
from judging.models import JudgeConfig, JudgeRun
from labeling.models import Annotation, LabelingQueue
from tests.factories import (
    make_eval_set,
    make_judge,
    make_output,
    make_rubric_version,
    make_user,
    make_workspace,
    set_role,
)
from tests.io_helpers import DATA

pytestmark = pytest.mark.django_db

# Each command with arguments that would do their work in workspace `alpha` (the fixture's names): only the
# workspace is missing or wrong. {tmp} is the test's folder, where the fixture writes the files they read.
RUBRIC_FILE = str(DATA / "rubric.json")
CASES_FILE = str(DATA / "cases.jsonl")
ALPHA = ["--eval-set", "alpha-set", "--rubric", "alpha-rubric@1"]
COMMANDS: dict[str, list[str]] = {
    "import_cases": ["--eval-set", "alpha-set", CASES_FILE],
    "import_rubric": [RUBRIC_FILE],
    "import_labels": [*ALPHA, str(DATA / "labels.jsonl")],
    "import_verdicts": [*ALPHA, "--judge", "alpha-judge", "{tmp}/verdicts.jsonl"],
    "export_data": ["--eval-set", "alpha-set", "--what", "cases"],
    "open_queue": [*ALPHA, "--by", "lee"],
    "add_judge": ["{tmp}/judge.json"],
    "run_judge": [*ALPHA, "--judge", "alpha-judge", "--in-process"],
    "probe_judge": [*ALPHA, "--judge", "alpha-judge", "--in-process"],
    "calibration_report": [*ALPHA, "--judge", "alpha-judge"],
    "approve": ["--rubric", "alpha-rubric@1", "--by", "lee", "--reason", "reads well"],
    "gate": [*ALPHA, "--judge", "alpha-judge"],
    "audit_plan": ["create", *ALPHA, "--judge", "alpha-judge", "--criterion", "correct_amount", "--by", "lee"],
    "judge_guidance": ["show", "alpha-judge"],
    "finish_traces": ["--now"],
}
COUNTED = (Workspace, EvalSet, Rubric, RubricVersion, JudgeConfig, JudgeRun, LabelingQueue, Annotation, GateResult)


@pytest.fixture
def two(tmp_path, monkeypatch):
    """Workspaces alpha and beta, each with an eval set, a rubric version and a judge config of its own names
    (beta's also a second of each, which no message from alpha may name); lee leads both."""
    monkeypatch.delenv("ICEWATER_WORKSPACE", raising=False)
    alpha, beta = make_workspace("alpha"), make_workspace("beta")
    for ws in (alpha, beta):
        es = make_eval_set(f"{ws.slug}-set", workspace=ws)
        make_output(eval_set=es)
        make_rubric_version(name=f"{ws.slug}-rubric", version="1", workspace=ws)
        make_judge(f"{ws.slug}-judge", workspace=ws)
    make_eval_set("beta-hidden", workspace=beta)
    make_rubric_version(name="beta-hidden", version="1", workspace=beta)
    make_judge("beta-hidden", workspace=beta)
    set_role(make_user("lee", Role.LEAD, workspace=alpha), Role.LEAD, beta)
    (tmp_path / "verdicts.jsonl").write_text(
        json.dumps({"case_id": "c-1", "criterion": "a", "outcome": "PASS", "evidence": "x"}) + "\n"
    )
    (tmp_path / "judge.json").write_text(json.dumps({"name": "alpha-judge-2", "backend": "imported"}))
    return alpha, beta


def argv(name: str, tmp_path: Path) -> list[str]:
    return [a.replace("{tmp}", str(tmp_path)) for a in COMMANDS[name]]


def counts() -> tuple[int, ...]:
    return tuple(model.objects.count() for model in (*COUNTED, AuditPlan))


def refusal(name: str, args: list[str]) -> str:
    """The command's one-line error; it must refuse with a CommandError (the gate's exit code is 2, not 1)."""
    with pytest.raises(CommandError) as refused:
        call_command(name, *args, stdout=StringIO(), stderr=StringIO())
    if name == "gate":
        assert refused.value.returncode == 2  # exit 1 would read as a failed gate in CI
    return str(refused.value)


@pytest.mark.parametrize("name", sorted(COMMANDS))
def test_an_unknown_workspace_is_a_one_line_error_naming_the_choices(two, name, tmp_path):
    before = counts()
    message = refusal(name, [*argv(name, tmp_path), "--workspace", "gamma"])
    assert message == "there is no workspace 'gamma' (workspaces: alpha, beta)"
    assert counts() == before


@pytest.mark.parametrize("name", sorted(COMMANDS))
def test_two_workspaces_and_none_named_is_ambiguous(two, name, tmp_path):
    before = counts()
    message = refusal(name, argv(name, tmp_path))
    assert message == "say which workspace with --workspace SLUG or $ICEWATER_WORKSPACE (workspaces: alpha, beta)"
    assert "\n" not in message
    assert counts() == before


def test_the_environment_names_the_workspace_and_one_workspace_needs_no_name(two, monkeypatch, tmp_path):
    # Negative control of the two tests above: with the workspace named (here by the environment) export_data
    # works; with only one workspace it needs no name at all.
    out = StringIO()
    monkeypatch.setenv("ICEWATER_WORKSPACE", "alpha")
    call_command("export_data", *argv("export_data", tmp_path), stdout=out, stderr=StringIO())
    assert '"case_id"' in out.getvalue()
    monkeypatch.delenv("ICEWATER_WORKSPACE")
    _, beta = two
    EvalSet.objects.filter(workspace=beta).delete()  # beta's set has an output: deleted with it
    RubricVersion.objects.filter(rubric__workspace=beta).delete()
    Rubric.objects.filter(workspace=beta).delete()
    JudgeConfig.objects.filter(workspace=beta).delete()
    beta.delete()
    out = StringIO()
    call_command("export_data", *argv("export_data", tmp_path), stdout=out, stderr=StringIO())
    assert '"case_id"' in out.getvalue()


# A name of beta's, looked up from alpha: the command refuses it as unknown, and says nothing of beta's names.
BETA_NAMES = {
    "import_labels": (["--eval-set", "beta-set", "--rubric", "alpha-rubric@1", str(DATA / "labels.jsonl")], "eval set"),
    "import_verdicts": (
        ["--eval-set", "alpha-set", "--rubric", "beta-rubric@1", "--judge", "x", "{tmp}/verdicts.jsonl"],
        "rubric",
    ),
    "export_data": (["--eval-set", "beta-set", "--what", "cases"], "eval set"),
    "open_queue": (["--eval-set", "alpha-set", "--rubric", "beta-rubric@1", "--by", "lee"], "rubric"),
    "run_judge": ([*ALPHA, "--judge", "beta-judge", "--in-process"], "judge config"),
    "probe_judge": (["--eval-set", "beta-set", "--rubric", "alpha-rubric@1", "--judge", "alpha-judge"], "eval set"),
    "calibration_report": ([*ALPHA, "--judge", "beta-judge"], "judge config"),
    "approve": (["--rubric", "beta-rubric@1", "--by", "lee", "--reason", "r"], "rubric"),
    "audit_plan": (
        ["create", *ALPHA, "--judge", "beta-judge", "--criterion", "correct_amount", "--by", "lee"],
        "judge config",
    ),
    "judge_guidance": (["show", "beta-judge"], "judge config"),
}


@pytest.mark.parametrize("name", sorted(BETA_NAMES))
def test_a_name_of_another_workspace_is_unknown_and_its_names_are_not_listed(two, name, tmp_path):
    args, what = BETA_NAMES[name]
    args = [a.replace("{tmp}", str(tmp_path)) for a in args]
    before = counts()
    message = refusal(name, [*args, "--workspace", "alpha"])
    assert what in message and ("unknown" in message or "no " in message), message
    assert "beta-hidden" not in message  # beta's other names
    assert counts() == before


def test_the_gate_reads_a_name_of_another_workspace_as_unknown(two, tmp_path):
    alpha, _ = two
    out, err = StringIO(), StringIO()
    with pytest.raises(SystemExit) as ended:
        call_command("gate", *ALPHA, "--judge", "beta-judge", "--workspace", "alpha", stdout=out, stderr=err)
    assert ended.value.code == 2
    assert "unknown judge config 'beta-judge' (known: alpha-judge)" in err.getvalue()
    assert "beta-hidden" not in err.getvalue()
    # Every decision is stored, in the workspace asked: alpha's, never beta's.
    assert list(GateResult.objects.values_list("workspace__slug", flat=True)) == ["alpha"]


def test_an_audit_plan_of_another_workspace_is_as_missing_as_none(two):
    message = refusal("audit_plan", ["show", "999999", "--workspace", "alpha"])
    assert message == "no audit plan 999999"


def test_two_workspaces_each_import_a_rubric_an_eval_set_and_a_judge_of_the_same_name(two, tmp_path):
    alpha, beta = two
    for ws in (alpha, beta):
        out = StringIO()
        call_command("import_rubric", RUBRIC_FILE, "--workspace", ws.slug, stdout=out)
        assert "imported refund-support@1" in out.getvalue()
        call_command("import_cases", "--eval-set", "refunds", CASES_FILE, "--workspace", ws.slug, stdout=out)
        call_command("add_judge", str(tmp_path / "judge.json"), "--workspace", ws.slug, stdout=out)
        assert "judge config alpha-judge-2 created" in out.getvalue()
    for ws in (alpha, beta):
        rv = RubricVersion.objects.by_ref("refund-support@1", ws)
        assert rv.rubric.workspace == ws
        assert EvalSet.objects.get(workspace=ws, name="refunds").cases.count() == 3
        assert JudgeConfig.objects.filter(workspace=ws, name="alpha-judge-2").count() == 1
    # Two rubrics, not one shared: a version approved in alpha leaves beta's a draft.
    call_command("approve", "--rubric", "refund-support@1", "--by", "lee", "--reason", "ok", "--workspace", "alpha")
    assert RubricVersion.objects.by_ref("refund-support@1", alpha).status == RubricVersion.Status.APPROVED
    assert RubricVersion.objects.by_ref("refund-support@1", beta).status == RubricVersion.Status.DRAFT
    # Importing the same files again changes nothing in either.
    before = counts()
    for ws in (alpha, beta):
        out = StringIO()
        call_command("import_rubric", RUBRIC_FILE, "--workspace", ws.slug, stdout=out)
        call_command("import_cases", "--eval-set", "refunds", CASES_FILE, "--workspace", ws.slug, stdout=out)
        assert "already imported" in out.getvalue() and "0 cases created" in out.getvalue()
    assert counts() == before


def test_imported_verdicts_make_their_judge_config_in_the_workspace_named(two, tmp_path):
    alpha, beta = two
    for ws in (alpha, beta):
        call_command("import_rubric", RUBRIC_FILE, "--workspace", ws.slug, stdout=StringIO())
        call_command("import_cases", "--eval-set", "refunds", CASES_FILE, "--workspace", ws.slug, stdout=StringIO())
    line = {"case_id": "r-001", "agent_version": "v1", "criterion": "correct_amount", "outcome": "PASS"}
    (tmp_path / "v.jsonl").write_text(json.dumps({**line, "evidence": "refund of $40.00"}) + "\n")
    scope = ["--eval-set", "refunds", "--rubric", "refund-support@1", "--judge", "ext", str(tmp_path / "v.jsonl")]
    call_command("import_verdicts", *scope, "--workspace", "beta", stdout=StringIO())
    assert list(JudgeConfig.objects.filter(name="ext").values_list("workspace__slug", flat=True)) == ["beta"]
    run = JudgeRun.objects.get(judge_config__name="ext")
    assert run.eval_set.workspace == beta and run.rubric_version.rubric.workspace == beta
