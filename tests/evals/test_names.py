"""Names are one line of visible characters: line breaks, tabs and invisible characters are refused on every path
(files, commands, the API, forms, the admin), while names in any script are accepted (evals/validators.py)."""

from __future__ import annotations

import json
import sys
import unicodedata

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.core.management import CommandError, call_command
from django.urls import reverse

from api.models import GateToken
from evals.models import EvalSet, Output, Role, Rubric
from evals.problems import ImportFailed
from evals.validators import name_problem
from formats.case_import import import_cases
from formats.label_import import import_labels
from formats.readers import open_source
from formats.rubric_import import import_rubric
from judging.models import JudgeConfig
from labeling.forms import RubricVersionForm
from tests.api_helpers import call, create_token
from tests.factories import default_workspace, make_rubric_version, make_user
from tests.inspect_helpers import REFUND_SAMPLES, write_log
from tests.io_helpers import DATA, data_source, jsonl, row_counts, source

pytestmark = pytest.mark.django_db

# Each looks like "rc 1" (or like "rc1") on a page, yet is another name.
LOOKALIKES = {
    "tab": "rc\t1",
    "line feed": "rc\n1",
    "carriage return": "rc\r1",
    "line separator": "rc\u20281",
    "paragraph separator": "rc\u20291",
    "no-break space": "rc\u00a01",
    "zero-width space": "rc\u200b1",
    "left-to-right mark": "rc\u200e1",
    "escape": "rc\x1b1",
    "vertical tab": "rc\x0b1",
    "next line": "rc\x851",
}
GOOD_NAMES = ["rc 1", "café-v2", "回答-1", "Ünïcödé ok", "refund-support", "v1.2_rc"]
OUTPUT = {"case_id": "r-001", "agent_version": "v1", "input": "Refund order 1234?", "response": "Refunded $40.00."}


def problems_of(exc: ImportFailed) -> list[tuple]:
    return [(p.line, p.field) for p in exc.problems]


@pytest.mark.parametrize("name", list(LOOKALIKES.values()), ids=list(LOOKALIKES))
def test_the_rule_refuses_characters_that_render_as_a_space_or_not_at_all(name):
    problem = name_problem(name)
    assert problem is not None and "at character 3" in problem


@pytest.mark.parametrize("name", GOOD_NAMES)
def test_the_rule_accepts_ordinary_names_in_any_script(name):
    assert name_problem(name) is None


def test_the_message_names_the_character():
    assert name_problem("a\tb").startswith("contains a tab (U+0009) at character 2")
    assert name_problem("a\u2028b").startswith("contains a line separator (U+2028) at character 2")
    assert "U+200E (LEFT-TO-RIGHT MARK)" in name_problem("a\u200eb")


def test_every_refused_character_is_one_python_calls_unprintable():
    """name_problem skips its walk for a printable name: sound only if no refused character is printable."""
    refused = {"Cc", "Cf", "Cs", "Zl", "Zp", "Zs"}  # the categories the rule names (evals/validators.py)
    printable_refused = [
        hex(code)
        for code in range(sys.maxunicode + 1)
        if chr(code).isprintable() and unicodedata.category(chr(code)) in refused and chr(code) != " "
    ]
    assert printable_refused == []
    # Unprintable yet allowed (private use, unassigned): the walk still lets them through.
    assert name_problem("a\ue000b") is None and name_problem("a\U000e0080b") is None
    assert name_problem(" printable ") == "must not start or end with spaces: ' printable '"


# -- files ---------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("field", ["case_id", "agent_version"])
def test_a_jsonl_record_with_a_control_character_in_a_name_is_refused_with_its_line_and_field(field):
    bad = {**OUTPUT, "case_id": "r-002", field: "x\u2028y"}
    with pytest.raises(ImportFailed) as caught:
        import_cases(
            workspace=default_workspace(), source=source("o.jsonl", jsonl(OUTPUT, bad)), eval_set_name="refunds"
        )
    assert problems_of(caught.value) == [(2, field)]
    assert "line separator (U+2028)" in str(caught.value)
    assert row_counts()["EvalSet"] == 0 and row_counts()["Output"] == 0


def test_a_csv_cell_with_a_line_break_in_a_case_id_is_refused():
    csv = 'case_id,agent_version,input,response\nr-001,v1,Where?,Here.\n"r-\r\n002",v1,Where?,Here.\n'
    with pytest.raises(ImportFailed) as caught:
        import_cases(workspace=default_workspace(), source=source("o.csv", csv), eval_set_name="refunds")
    assert [field for _, field in problems_of(caught.value)] == ["case_id"]
    assert "line break (carriage return)" in str(caught.value)
    assert row_counts()["Case"] == 0


def test_an_eval_set_name_or_default_agent_version_with_a_tab_is_refused():
    with pytest.raises(ImportFailed, match='field "eval set": contains a tab'):
        import_cases(workspace=default_workspace(), source=source("o.jsonl", jsonl(OUTPUT)), eval_set_name="rc\t1")
    with pytest.raises(ImportFailed, match='field "agent_version": contains a tab'):
        import_cases(
            workspace=default_workspace(),
            source=source("o.jsonl", jsonl(OUTPUT)),
            eval_set_name="rc-1",
            default_agent_version="v\t2",
        )
    assert row_counts()["EvalSet"] == 0


def test_an_adk_eval_id_with_a_line_break_is_refused():
    doc = json.loads((DATA / "refunds.evalset.json").read_text())
    doc["eval_cases"][0]["eval_id"] = "double\ncharge"
    with pytest.raises(ImportFailed) as caught:
        import_cases(
            workspace=default_workspace(), source=source("r.evalset.json", json.dumps(doc)), eval_set_name="refunds"
        )
    assert any(field.endswith("eval_id") for _, field in problems_of(caught.value))
    assert "line break (line feed)" in str(caught.value)
    assert row_counts()["Case"] == 0


def test_a_rubric_yaml_name_or_version_with_a_control_character_is_refused():
    text = (DATA / "rubric.yaml").read_text()
    bad_name = text.replace("name: refund-support", 'name: "refund\\u2028support"')
    with pytest.raises(ImportFailed) as caught:
        import_rubric(workspace=default_workspace(), source=source("r.yaml", bad_name))
    assert problems_of(caught.value) == [(2, "name")] and "line separator" in str(caught.value)
    bad_version = text.replace('version: "1"', 'version: "1\\t2"')
    with pytest.raises(ImportFailed, match='field "version": contains a tab'):
        import_rubric(workspace=default_workspace(), source=source("r.yaml", bad_version))
    assert not Rubric.objects.exists()


def test_a_label_studio_case_id_with_a_control_character_is_refused():
    import_rubric(workspace=default_workspace(), source=data_source("rubric.json"))
    import_cases(workspace=default_workspace(), source=data_source("cases.jsonl"), eval_set_name="refunds")
    tasks = json.loads((DATA / "labelstudio.json").read_text())
    tasks[0]["data"]["case_id"] = "r-001\u200b"
    before = row_counts()
    with pytest.raises(ImportFailed) as caught:
        import_labels(
            workspace=default_workspace(),
            source=source("ls.json", json.dumps(tasks)),
            eval_set_name="refunds",
            rubric_ref="refund-support@1",
        )
    assert {field for _, field in problems_of(caught.value)} == {"tasks[0].data.case_id"}
    assert "zero-width space" in str(caught.value)
    assert row_counts() == before


def test_ordinary_names_in_any_script_still_import():
    records = [{**OUTPUT, "case_id": "r-café", "agent_version": "café-v2"}, {**OUTPUT, "case_id": "回答 1"}]
    import_cases(
        workspace=default_workspace(), source=source("o.jsonl", jsonl(*records)), eval_set_name="Évaluation rc 1"
    )
    assert sorted(Output.objects.values_list("case__case_id", "agent_version")) == [
        ("r-café", "café-v2"),
        ("回答 1", "v1"),
    ]
    assert EvalSet.objects.get().name == "Évaluation rc 1"


# -- commands ------------------------------------------------------------------------------------------------


def test_import_cases_on_the_command_line_refuses_an_eval_set_name_with_a_line_break():
    default_workspace()  # the one workspace the command works in
    with pytest.raises(CommandError, match="contains a line break"):
        call_command("import_cases", str(DATA / "cases.jsonl"), "--eval-set", "rc-1\nrc-2")
    assert row_counts()["EvalSet"] == 0


def test_import_verdicts_refuses_a_judge_name_with_a_line_separator(tmp_path):
    rv = make_rubric_version("refund", "1")
    import_cases(workspace=default_workspace(), source=source("o.jsonl", jsonl(OUTPUT)), eval_set_name="rc-1")
    key = rv.criteria.first().key
    path = tmp_path / "verdicts.jsonl"
    path.write_text(jsonl({"case_id": "r-001", "agent_version": "v1", "criterion": key, "outcome": "PASS"}))
    with pytest.raises(CommandError, match="line separator"):
        call_command("import_verdicts", "--eval-set", "rc-1", "--rubric", "refund@1", "--judge", "j\u20281", str(path))
    assert not JudgeConfig.objects.exists()


# -- the API -------------------------------------------------------------------------------------------------


@pytest.fixture
def push_token(client, lead):
    return create_token(client, lead, ["push"], make_rubric_version("refund", "1"))


def test_a_push_with_a_control_character_in_a_record_or_a_parameter_is_refused(client, push_token):
    records = [OUTPUT, {**OUTPUT, "case_id": "r-002", "agent_version": "v1\r"}]
    response = call(client, "POST", "/api/outputs", push_token, {"records": records}, eval_set="rc-1")
    assert response.status_code == 400
    assert [(p["line"], p["field"]) for p in response.json()["problems"]] == [(2, "agent_version")]
    assert "carriage return" in response.json()["problems"][0]["message"]
    response = call(client, "POST", "/api/outputs", push_token, {"records": [OUTPUT]}, eval_set="rc\u00a01")
    assert response.status_code == 400 and "no-break space" in json.dumps(response.json(), ensure_ascii=False)
    assert row_counts()["EvalSet"] == 0
    response = call(client, "POST", "/api/outputs", push_token, {"records": [OUTPUT]}, eval_set="rc-café")
    assert response.status_code == 201 and EvalSet.objects.get().name == "rc-café"


# -- forms and the admin -------------------------------------------------------------------------------------


def test_the_rubric_editor_form_refuses_a_version_with_a_line_separator():
    form = RubricVersionForm(data={"version": "2\u20283", "instruction": ""})
    assert not form.is_valid() and "line separator" in form.errors["version"][0]
    assert RubricVersionForm(data={"version": "2-café", "instruction": ""}).is_valid()


@pytest.fixture
def superuser_client(client):
    user = make_user("root", Role.LEAD)
    user.is_staff = user.is_superuser = True
    user.save()
    client.force_login(user)
    return client


@pytest.mark.parametrize(
    "model,data,field",
    [
        ("evalset", {"name": "rc\u20281", "description": ""}, "name"),
        ("rubric", {"name": "refund\tsupport"}, "name"),
    ],
)
def test_the_admin_refuses_a_name_with_a_control_character(superuser_client, model, data, field):
    response = superuser_client.post(reverse(f"admin:evals_{model}_add"), data)
    assert response.status_code == 200  # the form again, with the error
    assert field in response.context["adminform"].form.errors
    assert "This name contains" in response.context["adminform"].form.errors[field][0]
    assert row_counts()["EvalSet"] == 0 and row_counts()["Rubric"] == 0
    good = superuser_client.post(reverse(f"admin:evals_{model}_add"), {**data, field: "café-v2"})
    assert good.status_code == 302


def test_the_upload_page_refuses_an_eval_set_name_with_a_line_separator_and_writes_nothing(client, lead):
    client.force_login(lead)
    data = {
        "kind": "cases",
        "cases-eval_set": "refunds\u2028rc",
        "cases-agent_version": "",
        "cases-file": SimpleUploadedFile("cases.csv", (DATA / "cases.csv").read_bytes()),
    }
    page = client.post(reverse("formats:upload"), data).content.decode().replace("&quot;", '"')
    assert 'field "eval set": contains a line separator (U+2028)' in page
    assert row_counts()["EvalSet"] == 0


def test_an_inspect_sample_id_with_a_tab_is_refused(tmp_path, offline):
    samples = [{**REFUND_SAMPLES[0], "id": "r-001\tbis"}]
    log = write_log(tmp_path, samples, model_graded=False)
    with open_source(log) as src, pytest.raises(ImportFailed) as caught:
        import_cases(workspace=default_workspace(), source=src, eval_set_name="refunds")
    assert [field for _, field in problems_of(caught.value)] == ["samples[0].id"]
    assert "contains a tab (U+0009)" in str(caught.value)
    assert row_counts()["Case"] == 0


def test_a_token_project_with_a_line_break_is_refused_on_the_gate_page(client, lead):
    rv = make_rubric_version("refund", "1")
    client.force_login(lead)
    data = {"project": "nightly\u2028ci", "rubric_version": rv.pk, "eval_set_pattern": "*", "scopes": ["gate"]}
    response = client.post(reverse("calibration:create_token"), data)
    assert response.status_code == 422 and "line separator" in response.content.decode()
    assert not GateToken.objects.exists()
    assert client.post(reverse("calibration:create_token"), {**data, "project": "nuit-café"}).status_code == 200
