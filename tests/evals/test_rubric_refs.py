"""NAME@VERSION has one rule: split at the last "@" (a version never holds one), one lookup, one exception."""

from __future__ import annotations

import io
import re

import pytest
from django.core.exceptions import ValidationError
from django.core.management import CommandError, call_command

from evals.models import Rubric, RubricVersion
from evals.validators import RUBRIC_REF_PATTERN, UnknownName, split_rubric_ref
from tests.factories import default_workspace, make_eval_set, make_judge, make_rubric_version, make_workspace


@pytest.mark.parametrize(
    "ref,name,version",
    [
        ("refund-support@1", "refund-support", "1"),
        ("refund-support@1.2", "refund-support", "1.2"),
        ("café-v2@rc 1", "café-v2", "rc 1"),
        # A name from before the rule may hold "@"; the version never does, so the last "@" splits.
        ("team@acme@2", "team@acme", "2"),
        ("a@b@c", "a@b", "c"),
    ],
)
def test_a_reference_splits_at_the_last_at_sign(ref, name, version):
    assert split_rubric_ref(ref) == (name, version)


@pytest.mark.parametrize("ref", ["refund-support", "@1", "refund@", "team@acme@", "", None])
def test_a_malformed_reference_says_how_to_write_one(ref):
    with pytest.raises(UnknownName) as refused:
        split_rubric_ref(ref)
    assert str(refused.value) == f"rubric must be written NAME@VERSION, e.g. refund-support@1, not {ref!r}"


@pytest.mark.parametrize(
    "ref", ["refund-support@1", "team@acme@2", "café-v2@rc 1", "refund-support", "@1", "refund@", "team@acme@", ""]
)
def test_the_api_schemas_pattern_accepts_what_the_parser_accepts(ref):
    try:
        split_rubric_ref(ref)
        parses = True
    except UnknownName:
        parses = False
    assert bool(re.fullmatch(RUBRIC_REF_PATTERN, ref)) is parses


def test_the_one_exception_is_a_value_error_so_nothing_that_caught_one_misses_it():
    assert issubclass(UnknownName, ValueError)


@pytest.mark.django_db
def test_by_ref_finds_the_version_and_says_what_exists_when_it_does_not():
    rv = make_rubric_version("refund", "1")
    make_rubric_version("refund", "2")
    make_rubric_version("tone", "1")
    assert RubricVersion.objects.by_ref("refund@1", default_workspace()) == rv
    with pytest.raises(UnknownName, match=r"^rubric 'refund' has no version '9' \(known: 1, 2\)$"):
        RubricVersion.objects.by_ref("refund@9", default_workspace())
    with pytest.raises(UnknownName, match=r"^there is no rubric 'nope' \(known: refund, tone\)$"):
        RubricVersion.objects.by_ref("nope@1", default_workspace())
    with pytest.raises(UnknownName, match=r"^unknown rubric version 'nope@1'$"):
        RubricVersion.objects.by_ref("nope@1", default_workspace(), say_known=False)
    with pytest.raises(UnknownName, match=r"^unknown rubric version 'refund@9'$"):
        RubricVersion.objects.by_ref("refund@9", default_workspace(), say_known=False)
    # Another workspace's rubric of the same name is not found from here, and its versions are not listed.
    other = make_workspace("other")
    make_rubric_version("refund", "9", workspace=other)
    make_rubric_version("secret", "1", workspace=other)
    with pytest.raises(UnknownName, match=r"^rubric 'refund' has no version '9' \(known: 1, 2\)$"):
        RubricVersion.objects.by_ref("refund@9", default_workspace())
    with pytest.raises(UnknownName, match=r"^there is no rubric 'secret' \(known: refund, tone\)$"):
        RubricVersion.objects.by_ref("secret@1", default_workspace())
    assert RubricVersion.objects.by_ref("refund@9", other).rubric.workspace == other  # negative control


@pytest.mark.django_db
def test_a_rubric_named_with_an_at_sign_before_the_rule_is_still_found():
    legacy = make_rubric_version("team@acme", "2")  # created directly, as the admin once allowed
    assert RubricVersion.objects.by_ref("team@acme@2", default_workspace()) == legacy
    assert RubricVersion.objects.by_ref(legacy.ref, default_workspace()) == legacy
    with pytest.raises(UnknownName, match="there is no rubric 'team'"):
        RubricVersion.objects.by_ref("team@acme", default_workspace())  # read as rubric "team", version "acme"


@pytest.mark.django_db
def test_forms_and_the_admin_refuse_an_at_sign_in_a_name_or_a_version():
    with pytest.raises(ValidationError) as refused:
        Rubric(name="team@acme", workspace=default_workspace()).full_clean()
    assert refused.value.message_dict == {
        "name": ['A rubric name must not contain "@" (rubrics are referred to as NAME@VERSION).']
    }
    Rubric(name="team-acme", workspace=default_workspace()).full_clean()  # the negative control
    rubric = Rubric.objects.create(name="refund", workspace=default_workspace())
    with pytest.raises(ValidationError) as refused:
        RubricVersion(rubric=rubric, version="1@2", content_hash="x").full_clean()
    assert refused.value.message_dict == {
        "version": ['A rubric version must not contain "@" (rubrics are referred to as NAME@VERSION).']
    }
    RubricVersion(rubric=rubric, version="1.2", content_hash="x").full_clean()


@pytest.mark.django_db
def test_the_admin_form_shows_the_refusal(admin_client):
    default_workspace()  # the workspace in use, where the admin adds the rubric
    response = admin_client.post("/admin/evals/rubric/add/", {"name": "team@acme"})
    assert response.status_code == 200
    assert "must not contain &quot;@&quot;" in response.content.decode()
    assert not Rubric.objects.exists()
    assert admin_client.post("/admin/evals/rubric/add/", {"name": "team-acme"}).status_code == 302
    assert Rubric.objects.get().workspace == default_workspace()


UNKNOWN_VERSION = "rubric 'refund' has no version '9' (known: 1)"
MALFORMED = "rubric must be written NAME@VERSION, e.g. refund-support@1, not 'refund'"


@pytest.mark.django_db
@pytest.mark.parametrize(
    "command,args",
    [
        ("run_judge", ["--eval-set", "es", "--judge", "j", "--in-process"]),
        ("probe_judge", ["--eval-set", "es", "--judge", "j", "--in-process"]),
        ("gate", ["--eval-set", "es", "--judge", "j"]),
        ("calibration_report", ["--eval-set", "es", "--judge", "j"]),
        ("approve", ["--by", "lead", "--reason", "checked"]),
        ("open_queue", ["--eval-set", "es", "--by", "lead"]),
        ("import_labels", ["--eval-set", "es", "labels.jsonl"]),
        ("import_verdicts", ["--eval-set", "es", "--judge", "j", "verdicts.jsonl"]),
        ("export_data", ["--eval-set", "es", "--what", "labels"]),
    ],
)
def test_every_command_reads_a_reference_the_same_way_and_says_the_same(tmp_path, lead, command, args, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "labels.jsonl").write_text("")
    (tmp_path / "verdicts.jsonl").write_text("")
    make_eval_set("es"), make_rubric_version("refund", "1"), make_judge("j")
    for ref, message in (("refund@9", UNKNOWN_VERSION), ("refund", MALFORMED)):
        assert message in refusal(command, "--rubric", ref, *args)


def refusal(*argv) -> str:
    # The gate records an undecided result, says why on stderr and exits 2 (CI reads the code); the others raise.
    stderr = io.StringIO()
    with pytest.raises((CommandError, SystemExit)) as refused:
        call_command(*argv, stderr=stderr)
    return f"{refused.value}{stderr.getvalue()}"
