"""Lead-written patterns run on RE2: no pattern can take exponential time, and what RE2 cannot run is refused.

The attack: an instrument config with `^(a+)+$`, which Python's backtracking `re` takes 2 s to try on 27
characters (doubling with each one more), so a run on long outputs never ends. Patterns now run on RE2,
and a pattern RE2 does not accept (backreferences, lookarounds) is refused where the config is made.
"""

from __future__ import annotations

import io
import json
import subprocess
import sys
import textwrap

import pytest
from django.core.management import CommandError, call_command
from django.urls import reverse

from judging import runner
from judging.backends import Misconfigured
from judging.backends.instruments import evaluate, validate_instruments
from judging.models import JudgeConfig, JudgeRun
from tests.config.test_settings import ROOT
from tests.factories import default_workspace, make_llm_judge, make_scope
from tests.judging_helpers import CONFIG_FORM

CATASTROPHIC = "^(a+)+$"
# Python-valid patterns RE2 has no way to run: a backreference, lookarounds, \Z.
UNSUPPORTED = [r"(refund)\s+\1", r"refund(?!ed)", r"(?<=\$)\d+", r"(?<!no )voucher", r"done\Z"]


@pytest.mark.subprocess
def test_a_catastrophic_pattern_on_a_long_output_finishes_with_the_right_answer():
    # 60 characters: Python's re would try about 2**60 ways to split the a's before giving up (years). RE2 runs
    # in time linear in the text. In a subprocess so that the old engine fails this test instead of hanging it.
    code = textwrap.dedent(
        f"""
        from judging.backends.instruments import evaluate
        for kind in ("regex_must_match", "regex_must_not_match"):
            spec = {{"kind": kind, "pattern": {CATASTROPHIC!r}}}
            print(kind, evaluate(spec, response="a" * 60 + "!", reference="").outcome,
                  evaluate(spec, response="a" * 60, reference="").outcome)
        spec = {{"kind": "reference_values_contained", "pattern": "(x+x+)+y"}}
        print("values", evaluate(spec, response="anything", reference="x" * 60).outcome)
        """
    )
    done = subprocess.run(
        [sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=300, check=False
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.split("\n")[:3] == [
        "regex_must_match FAIL PASS",  # no match on 60 a's and a '!'; a match on 60 a's
        "regex_must_not_match PASS FAIL",
        "values NOT_APPLICABLE",  # the reference holds no value the pattern matches
    ]


def test_a_match_is_quoted_with_its_case_and_characters_as_written():
    spec = {"kind": "regex_must_not_match", "pattern": "VOUCHER|bon d'achat", "ignore_case": True}
    result = evaluate(spec, response="Voici un Bon d'achat — ou un voucher.", reference="")
    assert (result.outcome, result.evidence) == ("FAIL", "Bon d'achat")
    amounts = {"kind": "reference_values_contained", "pattern": r"€\d+,\d{2}"}
    result = evaluate(amounts, response="Remboursé : €40,00 — merci.", reference="Rembourser €40,00.")
    assert (result.outcome, result.evidence) == ("PASS", "€40,00")


@pytest.mark.parametrize("pattern", UNSUPPORTED)
def test_a_pattern_re2_cannot_run_is_refused_with_a_message(pattern):
    [problem] = validate_instruments({"no_voucher": {"kind": "regex_must_not_match", "pattern": pattern}})
    assert problem.startswith("instruments['no_voucher']: pattern is not a valid regular expression for RE2 (")
    assert "no backreferences (\\1) and no lookarounds" in problem


def test_the_catastrophic_pattern_itself_is_accepted():
    assert validate_instruments({"a": {"kind": "regex_must_match", "pattern": CATASTROPHIC}}) == []


@pytest.mark.django_db
def test_the_judge_form_refuses_it_and_creates_nothing(client, lead):
    client.force_login(lead)
    instruments = {"no_voucher": {"kind": "regex_must_not_match", "pattern": "(?<!no )voucher"}}
    form = {**CONFIG_FORM, "name": "lookbehind", "instruments": json.dumps(instruments)}
    response = client.post(reverse("judging:config_new"), form)
    assert response.status_code == 400 and not JudgeConfig.objects.exists()
    assert "pattern is not a valid regular expression for RE2" in response.content.decode()
    instruments["no_voucher"]["pattern"] = "voucher"  # the positive control
    client.post(reverse("judging:config_new"), {**form, "instruments": json.dumps(instruments)})
    assert JudgeConfig.objects.get().instruments == instruments


@pytest.mark.django_db
def test_add_judge_refuses_it_and_writes_nothing(tmp_path):
    default_workspace()  # the one workspace add_judge makes its config in
    path = tmp_path / "judge.json"
    instruments = {"no_voucher": {"kind": "regex_must_not_match", "pattern": r"(refund)\s+\1"}}
    path.write_text(json.dumps({"name": "backref", "backend": "instrument", "instruments": instruments}))
    with pytest.raises(CommandError, match="Nothing was written") as exc:
        call_command("add_judge", str(path), stdout=io.StringIO())
    assert "pattern is not a valid regular expression for RE2 (invalid escape sequence: \\1)" in str(exc.value)
    assert not JudgeConfig.objects.exists()


@pytest.mark.django_db
def test_the_admin_refuses_it(admin_client):
    default_workspace()  # the workspace in use, where the admin would add the config
    instruments = {"no_voucher": {"kind": "regex_must_not_match", "pattern": "refund(?!ed)"}}
    form = {**CONFIG_FORM, "name": "lookahead", "instruments": json.dumps(instruments)}
    response = admin_client.post("/admin/judging/judgeconfig/add/", form)
    assert response.status_code == 200 and not JudgeConfig.objects.exists()
    assert "pattern is not a valid regular expression for RE2" in response.content.decode()


@pytest.mark.django_db
def test_a_config_stored_before_the_rule_cannot_start_a_run():
    judge = make_llm_judge(
        None, name="old", backend="instrument", instruments={"a": {"kind": "max_length", "max_words": 9}}
    )
    scope = make_scope(judge)
    JudgeConfig.objects.filter(pk=judge.pk).update(
        instruments={"a": {"kind": "regex_must_match", "pattern": r"done\Z"}}
    )
    scope.judge_config.refresh_from_db()
    with pytest.raises(Misconfigured, match=r"judge old: instruments\['a'\]: pattern is not a valid regular"):
        runner.create_run(scope, mode=JudgeRun.Mode.IN_PROCESS)
    assert not JudgeRun.objects.exists()
