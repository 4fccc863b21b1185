"""import_rubric: JSON or YAML in, an immutable NAME@VERSION out; bad files write nothing."""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys

import pytest
from django.core.management import CommandError, call_command

from evals.models import Criterion, RubricVersion
from evals.problems import ImportFailed
from formats.rubric_import import import_rubric
from tests.factories import default_workspace
from tests.io_helpers import DATA, data_source, row_counts, source

pytestmark = pytest.mark.django_db

TINY = {
    "name": "tiny",
    "version": "1",
    "instruction": "Grade it.",
    "criteria": [{"key": "polite", "definition": "The reply is polite."}],
}


def test_it_imports_a_json_rubric_as_a_draft_version_with_ordered_criteria():
    report = import_rubric(workspace=default_workspace(), source=data_source("rubric.json"))
    rv = RubricVersion.objects.get()
    assert rv.ref == "refund-support@1"
    assert rv.status == RubricVersion.Status.DRAFT
    assert rv.instruction == "Grade the agent's final answer to a refund request. Quote the transcript as evidence."
    assert list(rv.criteria.order_by("order").values_list("key", "order")) == [
        ("correct_amount", 0),
        ("next_step", 1),
        ("within_policy", 2),
    ]
    crit = rv.criteria.get(key="within_policy")
    assert crit.fail_example == "I'll also add a $20 voucher for the trouble."
    assert report.counts == {"rubric_versions_created": 1, "criteria_created": 3}
    assert "imported refund-support@1 (3 criteria)" in report.summary


def test_the_content_hash_is_sha256_of_the_canonical_instrument():
    import_rubric(workspace=default_workspace(), source=source("tiny.json", json.dumps(TINY)))
    # Worked by hand: keys sorted, missing examples as "", no spaces trimmed beyond json.dumps defaults.
    payload = (
        '{"criteria": [{"definition": "The reply is polite.", "fail_example": "", "key": "polite", '
        '"pass_example": ""}], "instruction": "Grade it."}'
    )
    assert RubricVersion.objects.get().content_hash == hashlib.sha256(payload.encode()).hexdigest()


def test_yaml_with_the_same_content_is_the_same_instrument_and_a_no_op():
    import_rubric(workspace=default_workspace(), source=data_source("rubric.json"))
    before = row_counts()
    report = import_rubric(workspace=default_workspace(), source=data_source("rubric.yaml"))
    assert row_counts() == before
    assert "already imported with the same content; nothing changed" in report.summary
    assert report.counts["rubric_versions_created"] == 0


def test_importing_the_same_file_twice_changes_nothing():
    call_command("import_rubric", str(DATA / "rubric.json"))
    before = row_counts()
    call_command("import_rubric", str(DATA / "rubric.json"))
    assert row_counts() == before


def test_different_content_under_an_existing_version_is_refused_and_points_to_a_new_version():
    import_rubric(workspace=default_workspace(), source=source("tiny.json", json.dumps(TINY)))
    edited = {**TINY, "criteria": [{"key": "polite", "definition": "The reply is polite and warm."}]}
    before = row_counts()
    with pytest.raises(ImportFailed) as exc:
        import_rubric(workspace=default_workspace(), source=source("tiny-edited.json", json.dumps(edited)))
    message = str(exc.value)
    assert 'tiny-edited.json, field "version": tiny@1 already exists with different content' in message
    assert 'change "version" (e.g. to "2")' in message
    assert row_counts() == before
    assert Criterion.objects.get().definition == "The reply is polite."


def test_an_edit_imported_as_a_new_version_is_a_second_version():
    import_rubric(workspace=default_workspace(), source=source("tiny.json", json.dumps(TINY)))
    edited = {**TINY, "version": "2", "instruction": "Grade it strictly."}
    import_rubric(workspace=default_workspace(), source=source("tiny2.json", json.dumps(edited)))
    assert sorted(RubricVersion.objects.values_list("version", flat=True)) == ["1", "2"]
    assert RubricVersion.objects.by_ref("tiny@2", default_workspace()).instruction == "Grade it strictly."


def test_a_whole_number_version_in_yaml_is_text():
    import_rubric(
        workspace=default_workspace(),
        source=source("r.yaml", "name: r\nversion: 3\ncriteria:\n  - key: a\n    definition: A.\n"),
    )
    assert RubricVersion.objects.get().version == "3"


BAD_RUBRICS = [
    # (file name, content, expected fragment of the message)
    ("r.json", '{"name": "r", "version": "1", "criteria": [', "r.json, line 1: not valid JSON (Expecting value"),
    ("r.json", "", "r.json: the file is empty"),
    (
        "r.json",
        '{\n "name": "r",\n "version": "1",\n "criteria": [\n  {"key": "a b", "definition": "x"}\n ]\n}',
        'r.json, line 5, field "criteria[0].key": "a b" is not a slug',
    ),
    (
        "r.json",
        '{\n "name": "r",\n "version": "1",\n "criteria": [\n  {"key": "a", "definition": "  "}\n ]\n}',
        'r.json, line 5, field "criteria[0].definition": is empty',
    ),
    (
        "r.json",
        '{"name": "r", "version": "1", "criteria": [\n'
        '{"key": "a", "definition": "x"},\n{"key": "a", "definition": "y"}]}',
        'r.json, line 3, field "criteria[1].key": "a" is already the key of a criterion on line 2',
    ),
    ("r.json", '{"version": "1", "criteria": [{"key": "a", "definition": "x"}]}', 'field "name": is missing'),
    ("r.json", '{"name": "r", "version": "1", "criteria": []}', 'field "criteria": must be a non-empty list'),
    (
        "r.json",
        '{"name": "r", "version": "1", "criteria": [{"key": "a", "defintion": "x"}]}',
        'field "criteria[0].defintion": unknown field (did you mean "definition"?)',
    ),
    (
        "r.json",
        '{"name": "r", "version": "1", "instructions": "x", "criteria": [{"key": "a", "definition": "x"}]}',
        'r.json, line 1, field "instructions": unknown field (did you mean "instruction"?)',
    ),
    (
        "r.json",
        '{"name": "r", "name": "s", "version": "1", "criteria": [{"key": "a", "definition": "x"}]}',
        'r.json, line 1, field "name": this key appears twice in the same object',
    ),
    (
        "r.json",
        '{"name": "a@b", "version": "1", "criteria": [{"key": "a", "definition": "x"}]}',
        'must not contain "@"',
    ),
    (
        "r.yaml",
        "name: r\nversion: 1.10\ncriteria:\n  - key: a\n    definition: x\n",
        'r.yaml, line 1, field "version": is the number 1.1; write it in quotes',
    ),
    ("r.yaml", "name: r\nversion: '1'\ncriteria:\n  - key: [\n", "r.yaml, line 5: not valid YAML"),
    (
        "r.yaml",
        "name: r\nversion: '1'\nname: s\ncriteria: []\n",
        'r.yaml, line 3, field "name": this key appears twice in the same object',
    ),
    ("r.json", b'{"name": "caf\xe9", "version": "1"}', "r.json, line 1: not UTF-8 text (byte 0xe9 at column 14)"),
    (
        "cases.jsonl",
        '{"case_id": "c1", "input": "hi", "response": "hello"}\n',
        "cases.jsonl, line 1: this looks like a cases file; import it with import_cases",
    ),
    ("ls.json", '[{"data": {"case_id": "c1"}, "annotations": []}]', "this looks like a Label Studio export"),
    (
        "r.json",
        '{"name": "r", "version": "1", "criteria": [{"key": "a", "definition": "x", "gold_policy": "any-fail"}]}',
        'field "criteria[0].gold_policy": \'any-fail\' is not a gold policy (did you mean "any_fail"?); use one of '
        "majority, any_fail, unanimous",
    ),
    (
        "r.json",
        '{"name": "r", "version": "1", "criteria": [{"key": "a", "definition": "x", "gold_policy": ["majority"]}]}',
        "['majority'] is not a gold policy",
    ),
]


@pytest.mark.parametrize(("name", "content", "expected"), BAD_RUBRICS)
def test_a_bad_rubric_file_is_refused_with_file_line_and_field_and_writes_nothing(name, content, expected):
    before = row_counts()
    with pytest.raises(CommandError) as exc:
        call_command("import_rubric", _write(name, content))
    assert expected in str(exc.value).replace(_tmpdir(), "")
    assert "Nothing was imported." in str(exc.value)
    assert row_counts() == before


def test_several_problems_are_reported_at_once():
    bad = {
        "name": "r",
        "version": "1",
        "criteria": [{"key": "ok", "definition": ""}, {"key": "no good", "definition": "x"}, "oops"],
    }
    with pytest.raises(ImportFailed) as exc:
        import_rubric(workspace=default_workspace(), source=source("r.json", json.dumps(bad, indent=1)))
    fields = [p.field for p in exc.value.problems]
    assert fields == ["criteria[0].definition", "criteria[1].key", "criteria[2]"]
    assert all(p.line is not None for p in exc.value.problems)


@pytest.mark.subprocess
def test_the_command_exits_non_zero_on_a_bad_file(tmp_path):
    bad = tmp_path / "broken.json"
    bad.write_text('{"name": "r",\n "version": }')
    env = {**os.environ, "ICEWATER_SECRET_KEY": os.environ.get("ICEWATER_SECRET_KEY", "x" * 50)}
    done = subprocess.run(
        [sys.executable, "manage.py", "import_rubric", str(bad)],
        capture_output=True,
        text=True,
        env=env,
        cwd=DATA.parent.parent,
        timeout=120,
    )
    assert done.returncode != 0
    assert f"{bad}, line 2: not valid JSON" in done.stderr


# Files for call_command live in a per-test temporary folder; messages name them by path.
_TMP: list[str] = []


@pytest.fixture(autouse=True)
def _tmp_folder(tmp_path):
    _TMP[:] = [str(tmp_path) + os.sep]
    yield


def _tmpdir() -> str:
    return _TMP[0]


def _write(name: str, content: str | bytes) -> str:
    path = os.path.join(_tmpdir(), name)
    with open(path, "wb") as out:
        out.write(content.encode() if isinstance(content, str) else content)
    return path
