"""Every reader refuses a key given twice and nesting beyond MAX_NESTING, with line and field, writing nothing.

JSON lines (orjson, and the exact parser for lines with long integers), JSON documents (rubrics, ADK files,
Label Studio exports), YAML rubrics, JSON inside CSV cells and judge configs: through the commands and the
upload page. Before these rules a repeated key kept its last value silently (a FAIL label read as PASS) and
a file nested 600-1,000 levels deep ended in a RecursionError (a traceback, or HTTP 500 on the page).
"""

from __future__ import annotations

import json

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.core.management import CommandError, call_command
from django.urls import reverse

from evals.models import Case, Output, RubricVersion
from formats.case_import import import_cases
from formats.rubric_import import import_rubric
from judging.models import JudgeConfig, JudgeRun, Verdict
from labeling.models import Label
from tests.factories import default_workspace
from tests.io_helpers import data_source, row_counts

pytestmark = pytest.mark.django_db
REF = "refund-support@1"
MAX_NESTING = 64  # the limit docs/formats.md states (evals.record_fields.MAX_NESTING)
DEEP = 1000
TWICE = "this key appears twice in the same object"
TOO_DEEP = f"is nested more than {MAX_NESTING} levels deep"


@pytest.fixture
def refunds():
    import_rubric(workspace=default_workspace(), source=data_source("rubric.json"))
    import_cases(workspace=default_workspace(), source=data_source("cases.jsonl"), eval_set_name="refunds")


def lists(depth: int, leaf: str = "x") -> str:
    """JSON text of `depth` lists inside each other."""
    return "[" * depth + json.dumps(leaf) + "]" * depth


def objects(depth: int, leaf: str = "1") -> str:
    """JSON text of `depth` objects inside each other, each under the key "a"."""
    return '{"a": ' * depth + leaf + "}" * depth


def everything() -> dict[str, int]:
    return {**row_counts(), "JudgeConfig": JudgeConfig.objects.count(), "Verdict": Verdict.objects.count()}


def run_command(tmp_path, command: str, name: str, content: str, *args: str) -> str:
    path = tmp_path / name
    path.write_text(content, encoding="utf-8")
    with pytest.raises(CommandError) as failure:
        call_command(command, *args, str(path))
    return str(failure.value)


IMPORT_CASES = ("import_cases", "--eval-set", "refunds")
IMPORT_LABELS = ("import_labels", "--eval-set", "refunds", "--rubric", REF)
IMPORT_VERDICTS = ("import_verdicts", "--eval-set", "refunds", "--rubric", REF, "--judge", "ext")
IMPORT_RUBRIC = ("import_rubric",)
ADD_JUDGE = ("add_judge",)

LABEL = {"case_id": "r-001", "agent_version": "v1", "criterion": "correct_amount", "annotator": "maria"}
VERDICT = {**LABEL, "evidence": "NONE", "raw": ""}
del VERDICT["annotator"]
RUBRIC_HEAD = '{"name": "deep", "version": "1",\n "instruction": "x",\n "criteria": [\n'


def labels_jsonl(*lines: str) -> str:
    return "".join(line + "\n" for line in lines)


GOOD_LABEL = json.dumps({**LABEL, "outcome": "PASS", "evidence": "NONE"})

DUPLICATES = [
    pytest.param(
        IMPORT_LABELS,
        "labels.jsonl",
        # The FAIL-became-PASS line: a plain JSON reader keeps the last "outcome".
        labels_jsonl(
            GOOD_LABEL, json.dumps(LABEL)[:-1] + ', "outcome": "FAIL", "evidence": "NONE", "outcome": "PASS"}'
        ),
        f'labels.jsonl, line 2, field "outcome": {TWICE}',
        id="twice-labels-jsonl",
    ),
    pytest.param(
        IMPORT_CASES,
        "cases.jsonl",
        '{"case_id": "c1", "input": "Q"}\n\n'
        '{"case_id": "c2", "input": "Q", "metadata": {"tier": "gold", "tier": "free"}}\n',
        f'cases.jsonl, line 3, field "metadata.tier": {TWICE}',
        id="twice-cases-jsonl-nested",
    ),
    pytest.param(
        IMPORT_CASES,
        "cases.jsonl",
        '{"case_id": "c1", "input": "Q", "metadata": {"n": 123456789012345678901234567890}, "input": "R"}\n',
        f'cases.jsonl, line 1, field "input": {TWICE}',
        id="twice-cases-jsonl-long-integer",
    ),
    pytest.param(
        IMPORT_CASES,
        "cases.csv",
        'case_id,input,metadata\nc1,Q,"{""a"": {""b"": 1, ""b"": 2}}"\n',
        f'cases.csv, line 2, field "metadata.a.b": {TWICE}',
        id="twice-cases-csv-cell",
    ),
    pytest.param(
        IMPORT_VERDICTS,
        "verdicts.jsonl",
        json.dumps(VERDICT)[:-1] + ', "outcome": "FAIL", "outcome": "PASS"}\n',
        f'verdicts.jsonl, line 1, field "outcome": {TWICE}',
        id="twice-verdicts-jsonl",
    ),
    pytest.param(
        IMPORT_LABELS,
        "ls.json",
        '[{"data": {"case_id": "r-001", "case_id": "r-002"}, "annotations": []}]',
        f'ls.json, line 1, field "tasks[0].data.case_id": {TWICE}',
        id="twice-label-studio",
    ),
    pytest.param(
        IMPORT_CASES,
        "x.evalset.json",
        '{"eval_set_id": "s",\n "eval_cases": [{"eval_id": "a", "eval_id": "b", "conversation": []}]}',
        f'x.evalset.json, line 2, field "eval_cases[0].eval_id": {TWICE}',
        id="twice-adk-evalset",
    ),
    pytest.param(
        IMPORT_RUBRIC,
        "rubric.yaml",
        "name: r\nversion: '1'\ncriteria:\n  - key: a\n    definition: x\n    definition: y\n",
        f'rubric.yaml, line 6, field "definition": {TWICE}',
        id="twice-rubric-yaml",
    ),
    pytest.param(
        ADD_JUDGE,
        "judge.json",
        '{"name": "j", "backend": "instrument",\n "instruments": {"a": {"kind": "max_length", "kind": "regex"}}}',
        f'judge.json, line 2, field "instruments.a.kind": {TWICE}',
        id="twice-judge-config",
    ),
]


def test_the_fail_that_became_pass_is_not_imported_at_all(refunds, tmp_path):
    # The line that used to import as PASS: it, and the good line before it, write nothing.
    content = labels_jsonl(
        GOOD_LABEL, json.dumps(LABEL)[:-1] + ', "outcome": "FAIL", "evidence": "NONE", "outcome": "PASS"}'
    )
    run_command(tmp_path, IMPORT_LABELS[0], "labels.jsonl", content, *IMPORT_LABELS[1:])
    assert not Label.objects.exists()


def deep_rubric_json() -> str:
    return RUBRIC_HEAD + '  {"key": "a", "definition": "d", "pass_example": ' + lists(DEEP) + "}]}\n"


def deep_rubric_yaml() -> str:
    return "name: deep\nversion: '1'\ncriteria:\n  - key: a\n    definition: d\n    pass_example: " + lists(DEEP) + "\n"


def deep_evalset() -> str:
    args = objects(DEEP)
    return (
        '{"eval_set_id": "s", "eval_cases": [\n {"eval_id": "a", "conversation": [\n'
        '  {"user_content": {"parts": [{"text": "hi"}]},\n'
        '   "intermediate_data": {"tool_uses": [{"name": "t", "args": ' + args + "}]}}]}]}\n"
    )


def deep_result() -> str:
    return (
        '{"eval_set_result_id": "r", "eval_case_results": [\n {"eval_id": "r-002",\n'
        '  "overall_eval_metric_results": [{"metric_name": "m", "details": ' + objects(DEEP) + "}]}]}\n"
    )


def deep_label_studio() -> str:
    return '[\n {"data": {"case_id": "r-001", "extra": ' + lists(DEEP) + '}, "annotations": []}]\n'


DEEP_FILES = [
    pytest.param(
        IMPORT_RUBRIC,
        "rubric.json",
        deep_rubric_json(),
        'rubric.json, line 4, field "criteria[0]',
        id="deep-rubric-json",
    ),
    pytest.param(
        IMPORT_RUBRIC,
        "rubric.yaml",
        deep_rubric_yaml(),
        'rubric.yaml, line 6, field "criteria[0]',
        id="deep-rubric-yaml",
    ),
    pytest.param(
        IMPORT_CASES,
        "s.evalset.json",
        deep_evalset(),
        's.evalset.json, line 4, field "eval_cases[0]',
        id="deep-adk-evalset",
    ),
    pytest.param(
        IMPORT_CASES,
        "r.evalset_result.json",
        deep_result(),
        "r.evalset_result.json, line 3, field",
        id="deep-adk-result",
    ),
    pytest.param(
        IMPORT_VERDICTS,
        "r.evalset_result.json",
        deep_result(),
        "r.evalset_result.json, line 3, field",
        id="deep-adk-verdicts",
    ),
    pytest.param(
        IMPORT_LABELS,
        "ls.json",
        deep_label_studio(),
        'ls.json, line 2, field "tasks[0].data.extra',
        id="deep-label-studio",
    ),
    pytest.param(
        IMPORT_CASES,
        "cases.jsonl",
        '{"case_id": "c1", "input": "Q"}\n{"case_id": "c2", "input": "Q", "metadata": ' + objects(DEEP) + "}\n",
        'cases.jsonl, line 2, field "metadata.a.a.a.a.a..."',
        id="deep-cases-jsonl",
    ),
    pytest.param(
        IMPORT_CASES,
        "cases.jsonl",
        '{"case_id": "c1", "input": "Q", "metadata": ' + objects(600, "123456789012345678901234567890") + "}\n",
        'cases.jsonl, line 1, field "metadata.a.a.a.a.a..."',
        id="deep-cases-jsonl-long-integer",
    ),
    pytest.param(
        IMPORT_CASES,
        "cases.csv",
        'case_id,input,response,tool_calls\nc1,Q,A,"' + lists(DEEP).replace('"', '""') + '"\n',
        'cases.csv, line 2, field "tool_calls[0][0][0][0][0][0]..."',
        id="deep-cases-csv-cell",
    ),
    pytest.param(
        IMPORT_LABELS,
        "labels.jsonl",
        json.dumps({**LABEL, "outcome": "PASS"})[:-1] + ', "evidence": ' + lists(DEEP) + "}\n",
        'labels.jsonl, line 1, field "evidence[0][0][0][0][0]..."',
        id="deep-labels-jsonl",
    ),
    pytest.param(
        IMPORT_VERDICTS,
        "verdicts.jsonl",
        json.dumps({**VERDICT, "outcome": "PASS"})[:-1].replace('"raw": ""', '"raw": ' + objects(DEEP)) + "}\n",
        'verdicts.jsonl, line 1, field "raw.a.a.a.a.a..."',
        id="deep-verdicts-jsonl",
    ),
    pytest.param(
        ADD_JUDGE,
        "judge.json",
        '{"name": "j", "backend": "instrument",\n "instruments": ' + objects(DEEP) + "}",
        'judge.json, line 2, field "instruments.a.a.a.a.a..."',
        id="deep-judge-config",
    ),
]


@pytest.mark.parametrize(("command", "name", "content", "expected"), DUPLICATES + DEEP_FILES)
def test_a_key_given_twice_or_nesting_beyond_the_limit_is_refused_with_line_and_field_and_nothing_is_written(
    refunds, tmp_path, command, name, content, expected
):
    before = everything()
    message = run_command(tmp_path, command[0], name, content, *command[1:])
    assert expected in message and (TWICE in message or TOO_DEEP in message)
    assert everything() == before


def test_a_line_just_past_the_limit_is_refused_although_the_fast_parser_would_read_it(refunds, tmp_path):
    # orjson reads 65 (and up to 1,024) levels; such a line used to be imported and then broke readers that
    # recurse (a re-import through the exact parser, orjson's writer beyond 255 levels).
    content = '{"case_id": "c1", "input": "Q", "metadata": ' + objects(MAX_NESTING) + "}\n"
    message = run_command(tmp_path, "import_cases", "cases.jsonl", content, "--eval-set", "refunds")
    assert 'line 1, field "metadata.a.a.a.a.a..."' in message and TOO_DEEP in message


def test_nesting_up_to_the_limit_is_imported(refunds, tmp_path):
    from evals.record_fields import MAX_NESTING as limit

    assert limit == MAX_NESTING
    # The record is one level, its metadata the other 63.
    path = tmp_path / "cases.jsonl"
    path.write_text('{"case_id": "c1", "input": "Q", "metadata": ' + objects(MAX_NESTING - 1) + "}\n")
    call_command("import_cases", "--eval-set", "deep-ok", str(path))
    metadata = Case.objects.get(eval_set__name="deep-ok").metadata
    for _ in range(MAX_NESTING - 2):
        metadata = metadata["a"]
    assert metadata == {"a": 1}
    rubric = tmp_path / "rubric.yaml"
    example = "[" * (MAX_NESTING - 3) + "]" * (MAX_NESTING - 3)  # rubric, criteria and a criterion are 3 levels
    rubric.write_text(f"name: deep\nversion: '1'\ncriteria:\n  - key: a\n    definition: d\n    x: {example}\n")
    with pytest.raises(CommandError, match='field "criteria\\[0\\].x": unknown field'):
        call_command("import_rubric", str(rubric))  # read all the way down, then refused for the field only


def test_commas_and_brackets_inside_strings_do_not_count_as_nesting(refunds, tmp_path):
    text = '[{"a": "}]"}, ' * 100 + "]"  # 200 brackets in strings, real depth 2
    path = tmp_path / "cases.jsonl"
    path.write_text(json.dumps({"case_id": "c1", "input": "Q", "response": "A", "metadata": {"t": text}}) + "\n")
    call_command("import_cases", "--eval-set", "strings", str(path))
    assert Output.objects.get(case__eval_set__name="strings").case.metadata == {"t": text}


UPLOAD = reverse("formats:upload")


def post(client, kind: str, name: str, content: str, **fields):
    data = {"kind": kind, f"{kind}-file": SimpleUploadedFile(name, content.encode())}
    data.update({f"{kind}-{k}": v for k, v in fields.items()})
    response = client.post(UPLOAD, data)
    assert response.status_code == 200
    return response.content.decode().replace("&quot;", '"')


@pytest.mark.parametrize(
    ("kind", "name", "content", "expected"),
    [
        ("rubric", "rubric.json", deep_rubric_json(), 'rubric.json, line 4, field "criteria[0]'),
        ("rubric", "rubric.yaml", deep_rubric_yaml(), 'rubric.yaml, line 6, field "criteria[0]'),
        ("cases", "s.evalset.json", deep_evalset(), 's.evalset.json, line 4, field "eval_cases[0]'),
        ("cases", "c.jsonl", '{"case_id": "c1", "input": "Q", "metadata": ' + objects(DEEP) + "}\n", "c.jsonl, line 1"),
        ("labels", "ls.json", deep_label_studio(), 'ls.json, line 2, field "tasks[0].data.extra'),
    ],
)
def test_the_upload_page_refuses_deep_files_with_a_message_not_a_500(
    client, lead, refunds, kind, name, content, expected
):
    client.force_login(lead)
    before = everything()
    page = post(client, kind, name, content, eval_set="refunds", rubric=_rubric_pk(), agent_version="default")
    assert 'data-result="failed"' in page and expected in page and TOO_DEEP in page
    assert "Nothing was imported." in page
    assert everything() == before


def test_the_upload_page_refuses_a_key_given_twice(client, lead, refunds):
    client.force_login(lead)
    content = labels_jsonl(json.dumps(LABEL)[:-1] + ', "outcome": "FAIL", "outcome": "PASS"}')
    page = post(client, "labels", "labels.jsonl", content, eval_set="refunds", rubric=_rubric_pk(), agent_version="v1")
    assert f'labels.jsonl, line 1, field "outcome": {TWICE}' in page
    assert not Label.objects.exists() and not JudgeRun.objects.exists()


def _rubric_pk() -> int:
    return RubricVersion.objects.by_ref(REF, default_workspace()).pk
