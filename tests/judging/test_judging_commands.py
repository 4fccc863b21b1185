"""add_judge, run_judge, import_verdicts and the verdict export: clear errors, nothing half-written."""

from __future__ import annotations

import io
import json
import re

import pytest
from django.core.management import CommandError, call_command
from django.urls import reverse

from formats.verdicts import EXPORT_COLUMNS, export_verdicts
from judging.models import JudgeConfig, JudgeRun, Verdict
from judging.run_progress import progress_of
from tests.factories import (
    RESPONSE,
    default_workspace,
    make_eval_set,
    make_llm_judge,
    make_output,
    make_rubric_version,
    make_scope,
)
from tests.judging_helpers import KEY_ENV, judge_in_process

INSTRUMENTS = {
    "correct_amount": {"kind": "reference_values_contained", "pattern": r"\$\d+\.\d{2}"},
    "next_step": {"kind": "regex_must_match", "pattern": r"business days"},
}


def run_command(*args) -> str:
    out = io.StringIO()
    call_command(*args, stdout=out)
    return out.getvalue()


def write(tmp_path, name: str, content) -> str:
    path = tmp_path / name
    path.write_text(content if isinstance(content, str) else json.dumps(content), encoding="utf-8")
    return str(path)


# -- add_judge ------------------------------------------------------------------------------------------


@pytest.mark.django_db
def test_add_judge_creates_a_config_with_defaults_for_what_the_file_leaves_out(tmp_path):
    default_workspace()  # the one workspace add_judge makes its config in
    path = write(
        tmp_path,
        "j.json",
        {
            "name": "gpt-judge",
            "backend": "openai",
            "model_id": "gpt-x-2026-01-01",
            "api_key_env": "OPENAI_API_KEY",
            "base_url": "http://localhost:8001/v1",
        },
    )
    assert "judge config gpt-judge created" in run_command("add_judge", path)
    config = JudgeConfig.objects.get(name="gpt-judge")
    assert (config.temperature, config.samples, config.mode, config.max_concurrency) == (0.0, 1, "per_output", 4)
    assert config.content_hash == config.compute_hash()


@pytest.mark.django_db
def test_add_judge_twice_is_a_no_op_and_a_used_config_cannot_change(tmp_path):
    default_workspace()  # the one workspace add_judge makes its config in
    data = {"name": "inst", "backend": "instrument", "instruments": INSTRUMENTS}
    path = write(tmp_path, "j.json", data)
    run_command("add_judge", path)
    assert "already there, unchanged" in run_command("add_judge", path)
    assert JudgeConfig.objects.count() == 1
    # Unused: it may still be corrected.
    path = write(tmp_path, "j.json", {**data, "samples": 3})
    assert "updated" in run_command("add_judge", path)
    config = JudgeConfig.objects.get()
    JudgeRun.objects.create(eval_set=make_eval_set(), rubric_version=make_rubric_version(), judge_config=config)
    path = write(tmp_path, "j.json", {**data, "samples": 5})
    with pytest.raises(CommandError, match="is in use by runs or verdicts and cannot change \\(samples\\)"):
        run_command("add_judge", path)
    config.refresh_from_db()
    assert config.samples == 3


@pytest.mark.django_db
@pytest.mark.parametrize(
    ("content", "message"),
    [
        ("{not json", "not valid JSON (Expecting property name enclosed in double quotes at line 1 column 2)"),
        ("[1, 2]", "must hold one JSON object"),
        ({"name": "x", "backend": "openai", "api_key": "sk-123"}, "has an api_key; keys are never stored"),
        ({"name": "x", "backend": "openai", "modelid": "m"}, "unknown field(s) modelid"),
        ({"name": "x", "backend": "llama"}, "backend: Select a valid choice. llama is not one of the available"),
        ({"name": "x", "backend": "openai"}, "model_id: A model backend needs a pinned model id"),
        ({"name": "x", "backend": "openai", "model_id": "m", "api_key_env": "sk-live-abc"}, "not the key itself"),
        ({"name": "two words", "backend": "instrument", "instruments": INSTRUMENTS}, "no spaces"),
        ({"name": "x", "backend": "instrument"}, "An instrument judge needs at least one instrument"),
        (
            {"name": "x", "backend": "instrument", "instruments": {"a": {"kind": "regex_must_match", "pattern": "("}}},
            "pattern is not a valid regular expression",
        ),
        ({"name": "x", "backend": "instrument", "instruments": {"a": {"kind": "vibes"}}}, "kind 'vibes' is not one of"),
        ({"name": "x", "backend": "instrument", "instruments": {"a": {"kind": "max_length"}}}, "needs max_chars or"),
        ({"name": "x", "backend": "openai", "model_id": "m", "samples": 0}, "samples: Must be between 1 and 15"),
        ({"name": "x", "backend": "openai", "model_id": "m", "base_url": "ftp://h"}, "http:// or https:// URL"),
        (
            {"name": "x", "backend": "anthropic", "model_id": "m", "api_key_env": "K", "temperature": 0.5},
            "has no temperature",
        ),
        ({"name": "x", "backend": "openai", "model_id": "m", "prompt_template_version": "v9"}, "Unknown template"),
    ],
)
def test_add_judge_rejects_bad_files_with_a_clear_message_and_writes_nothing(tmp_path, content, message):
    default_workspace()  # the one workspace add_judge makes its config in
    path = write(tmp_path, "j.json", content)
    with pytest.raises(CommandError) as failure:
        run_command("add_judge", path)
    assert message in str(failure.value)
    assert not JudgeConfig.objects.exists()


def test_add_judge_names_a_missing_file():
    with pytest.raises(CommandError, match="no such file"):
        run_command("add_judge", "/nonexistent/judge.json")


# -- run_judge ------------------------------------------------------------------------------------------


def instrument_scope():
    judge = make_llm_judge(name="inst", backend="instrument", instruments=INSTRUMENTS)
    return make_scope(judge, responses=[RESPONSE, "No idea."], rubric=make_rubric_version(name="refund", version="1"))


@pytest.mark.django_db(transaction=True)
def test_run_judge_in_process_exits_zero_when_every_item_has_a_verdict():
    scope = instrument_scope()
    out = run_command(
        "run_judge", "--eval-set", scope.eval_set.name, "--rubric", "refund@1", "--judge", "inst", "--in-process"
    )
    assert "4/4 verdicts (PASS=2 FAIL=2 NOT_APPLICABLE=0 ABSTAIN=0 ERROR=0" in out
    run = JudgeRun.objects.get()
    assert run.status == "done" and run.mode == "in_process" and Verdict.objects.filter(run=run).count() == 4


@pytest.mark.django_db(transaction=True)
def test_run_judge_counts_error_verdicts_as_verdicts(judge_key, fake_llm):
    judge = make_llm_judge(fake_llm, max_retries=0)
    scope = make_scope(judge, responses=[f"{RESPONSE} [[fake:500]]"], rubric=make_rubric_version("refund", "1"))
    out = run_command(
        "run_judge", "--eval-set", scope.eval_set.name, "--rubric", "refund@1", "--judge", "judge", "--in-process"
    )
    assert "ERROR=2" in out and "ERROR x2 (server): HTTP 500" in out


@pytest.mark.django_db
@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--eval-set", "nope"], "no eval set named 'nope'"),
        (["--rubric", "refund"], "must be written NAME@VERSION"),
        (["--rubric", "refund@7"], "rubric 'refund' has no version '7' (known: 1)"),
        (["--judge", "nobody"], "no judge config named 'nobody' (known: imported-one, inst, keyless)"),
        (["--judge", "keyless"], f"the environment variable {KEY_ENV} that should hold its API key is not set"),
        (["--judge", "imported-one"], "imported from elsewhere and cannot run"),
        (["--agent-version", "v9"], "no outputs of agent version 'v9' (known: default)"),
    ],
)
def test_run_judge_refuses_a_misconfiguration_with_exit_code_2(monkeypatch, args, message):
    monkeypatch.delenv(KEY_ENV, raising=False)
    scope = instrument_scope()
    make_llm_judge(name="keyless", backend="openai", base_url="http://127.0.0.1:9/v1")
    make_llm_judge(name="imported-one", backend="imported")
    defaults = {"--eval-set": scope.eval_set.name, "--rubric": "refund@1", "--judge": "inst"}
    given = dict(zip(args[::2], args[1::2], strict=True))
    argv = [x for k, v in {**defaults, **given}.items() for x in (k, v)]
    with pytest.raises(CommandError) as failure:
        run_command("run_judge", *argv, "--in-process")
    assert message in str(failure.value)
    assert failure.value.returncode == 2
    assert not JudgeRun.objects.exists()


@pytest.mark.django_db(transaction=True)
def test_run_judge_wait_gives_up_after_its_timeout_when_no_worker_runs():
    scope = instrument_scope()
    with pytest.raises(CommandError) as failure:
        run_command(
            "run_judge",
            "--eval-set",
            scope.eval_set.name,
            "--rubric",
            "refund@1",
            "--judge",
            "inst",
            "--wait",
            "--timeout",
            "0.5",
            "--poll",
            "0.2",
        )
    assert "still queued after 0.5 s (is a Celery worker running on this queue?)" in str(failure.value)
    assert failure.value.returncode == 1
    JudgeRun.objects.update(status="cancelled")  # leave nothing for a later worker on this queue to pick up


# -- import_verdicts and export ------------------------------------------------------------------------------


@pytest.fixture
def judged_set(db):
    eval_set = make_eval_set("support")
    rv = make_rubric_version(name="refund", version="1")
    make_output(eval_set, case_id="c1", response=RESPONSE)
    make_output(eval_set, case_id="c2", response="Refund processed.")
    make_output(eval_set, case_id="c2", agent_version="v2", response="Refunded, arrives in 5 business days.")
    return eval_set, rv


def jsonl(*records) -> str:
    return "".join(json.dumps(r) + "\n" for r in records)


def line(case_id, criterion, outcome, evidence="NONE", raw="{}", agent_version="default", **extra):
    return {
        "case_id": case_id,
        "agent_version": agent_version,
        "criterion": criterion,
        "outcome": outcome,
        "evidence": evidence,
        "raw": raw,
        **extra,
    }


def test_import_verdicts_creates_an_imported_judge_and_a_finished_run(tmp_path, judged_set):
    path = write(
        tmp_path,
        "v.jsonl",
        jsonl(
            line("c1", "correct_amount", "PASS", "refund of $40.00"),
            line("c1", "next_step", "FAIL", "not in the transcript"),
            line("c2", "correct_amount", "ERROR", "", error_reason="judge timed out"),
            line("c2", "next_step", "NOT_APPLICABLE", agent_version="v2"),
        ),
    )
    out = run_command("import_verdicts", "--eval-set", "support", "--rubric", "refund@1", "--judge", "ext", path)
    assert 'judge "ext" (created, backend imported): 4 verdicts imported' in out
    assert "1 evidence quote not found verbatim" in out
    judge = JudgeConfig.objects.get(name="ext")
    run = JudgeRun.objects.get(judge_config=judge)
    assert (judge.backend, run.status, run.mode) == ("imported", "done", "import")
    progress = progress_of(run)
    assert (
        progress.complete
        and progress.percent == 100
        and progress.outcomes == {"PASS": 1, "FAIL": 1, "ERROR": 1, "NOT_APPLICABLE": 1}
    )
    got = {
        (v.output.case.case_id, v.output.agent_version, v.criterion.key): (v.outcome, v.evidence_found, v.error_reason)
        for v in Verdict.objects.select_related("output__case", "criterion")
    }
    assert got == {
        ("c1", "default", "correct_amount"): ("PASS", True, ""),
        ("c1", "default", "next_step"): ("FAIL", False, ""),
        ("c2", "default", "correct_amount"): ("ERROR", None, "judge timed out"),
        ("c2", "v2", "next_step"): ("NOT_APPLICABLE", True, ""),
    }
    assert "already there; nothing imported" in run_command(
        "import_verdicts", "--eval-set", "support", "--rubric", "refund@1", "--judge", "ext", path
    )
    assert JudgeRun.objects.count() == 1


def test_import_verdicts_lists_every_bad_line_and_writes_nothing(tmp_path, judged_set):
    path = write(
        tmp_path,
        "v.jsonl",
        jsonl(
            line("c1", "correct_amount", "PASS"),
            line("c1", "corect_amount", "PASS"),
            line("c1", "next_step", "pass"),
            line("c9", "next_step", "FAIL"),
            line("c1", "correct_amount", "FAIL"),
        )
        + "{oops\n"
        + jsonl(
            {**line("c1", "next_step", "PASS"), "outcom": "PASS"},
            line("c2", "next_step", "PASS", agent_version=""),
            line("c1", "next_step", "PASS", sample=-1),
        ),
    )
    with pytest.raises(CommandError) as failure:
        run_command("import_verdicts", "--eval-set", "support", "--rubric", "refund@1", "--judge", "ext", path)
    text = str(failure.value)
    for expected in [
        'line 2, field "criterion": "corect_amount" is not a criterion of the rubric (did you mean "correct_amount"?)',
        'line 3, field "outcome": must be one of PASS, FAIL, NOT_APPLICABLE, ABSTAIN, ERROR, not "pass" '
        '(did you mean "PASS"?)',
        'line 4, field "case_id": no case "c9" with an output in eval set "support"',
        'line 5, field "criterion": repeats the verdict of line 1 for this output, criterion and sample',
        "line 6: not valid JSON",
        'line 7, field "outcom": unknown field (did you mean "outcome"?)',
        'line 8, field "agent_version": is missing, and case "c2" has outputs of default, v2',
        'line 9, field "sample": must be a whole number from 0 to 1000, not -1',
        "Nothing was imported.",
    ]:
        assert expected in text
    assert not JudgeConfig.objects.exists() and not Verdict.objects.exists()


def test_import_verdicts_refuses_a_missing_eval_set_or_rubric(tmp_path, judged_set):
    path = write(tmp_path, "v.jsonl", jsonl(line("c1", "correct_amount", "PASS")))
    with pytest.raises(CommandError, match='there is no eval set "nope"'):
        run_command("import_verdicts", "--eval-set", "nope", "--rubric", "refund@1", "--judge", "x", path)
    with pytest.raises(CommandError, match=re.escape("rubric 'refund' has no version '2' (known: 1)")):
        run_command("import_verdicts", "--eval-set", "support", "--rubric", "refund@2", "--judge", "x", path)
    with pytest.raises(CommandError, match="no such file"):
        run_command("import_verdicts", "--eval-set", "support", "--rubric", "refund@1", "--judge", "x", "/no/file")
    assert not JudgeConfig.objects.exists()


IMPORT = ("import_verdicts", "--eval-set", "support", "--rubric", "refund@1", "--judge", "ext")


def current_outcomes(judge: str = "ext") -> dict[tuple[str, str, str], str]:
    from evals.models import EvalSet, RubricVersion
    from judging.current_verdicts import current_verdicts

    verdicts = current_verdicts(
        eval_set=EvalSet.objects.get(name="support"),
        rubric_version=RubricVersion.objects.get(rubric__name="refund"),
        judge_config=JudgeConfig.objects.get(name=judge),
    )
    return {
        (case_id, version, key): outcome
        for case_id, version, key, outcome in verdicts.values_list(
            "output__case__case_id", "output__agent_version", "criterion__key", "outcome"
        )
    }


def test_a_verdict_imported_again_with_another_outcome_is_refused_with_line_and_field(tmp_path, judged_set):
    run_command(
        *IMPORT,
        write(tmp_path, "v1.jsonl", jsonl(line("c1", "correct_amount", "FAIL"), line("c1", "next_step", "PASS"))),
    )
    before = (JudgeRun.objects.count(), Verdict.objects.count())
    changed = jsonl(line("c1", "next_step", "PASS"), line("c1", "correct_amount", "PASS"))
    with pytest.raises(CommandError) as failure:
        run_command(*IMPORT, write(tmp_path, "v2.jsonl", changed))
    text = str(failure.value)
    assert (
        'v2.jsonl, line 2, field "outcome": case "c1" (default), criterion "correct_amount", sample 0 already has a '
        'verdict of judge "ext"' in text
    )
    assert "with a different outcome; an import never overwrites a verdict" in text and "--new-run LABEL" in text
    assert "line 1" not in text and text.endswith("Nothing was imported.")  # the unchanged line is no problem
    assert (JudgeRun.objects.count(), Verdict.objects.count()) == before
    assert current_outcomes() == {("c1", "default", "correct_amount"): "FAIL", ("c1", "default", "next_step"): "PASS"}


def test_other_fields_of_a_verdict_count_as_its_content_too(tmp_path, judged_set):
    run_command(*IMPORT, write(tmp_path, "v1.jsonl", jsonl(line("c1", "correct_amount", "FAIL", tokens_in=10))))
    for changed, field in [
        ({"evidence": "other"}, "evidence"),
        ({"tokens_in": 11}, "tokens_in"),
        ({"raw": "x"}, "raw"),
    ]:
        record = {**line("c1", "correct_amount", "FAIL", tokens_in=10), **changed}
        with pytest.raises(CommandError, match=f'line 1, field "{field}": case "c1"'):
            run_command(*IMPORT, write(tmp_path, "v2.jsonl", jsonl(record)))
    assert Verdict.objects.count() == 1


def test_a_changed_verdict_comes_in_only_as_a_new_run_the_user_names(tmp_path, judged_set, client, lead):
    run_command(
        *IMPORT,
        write(tmp_path, "v1.jsonl", jsonl(line("c1", "correct_amount", "FAIL"), line("c1", "next_step", "PASS"))),
    )
    second = write(tmp_path, "v2.jsonl", jsonl(line("c1", "correct_amount", "PASS"), line("c1", "next_step", "PASS")))
    out = run_command(*IMPORT, "--new-run", "second opinion", second)
    run = JudgeRun.objects.get(label="second opinion")
    assert f'2 verdicts imported as run {run.pk} "second opinion"' in out
    assert run.verdicts.count() == 2 and JudgeRun.objects.count() == 2
    assert current_outcomes()[("c1", "default", "correct_amount")] == "PASS"  # the new run supersedes, item by item
    client.force_login(lead)
    assert "“second opinion”" in client.get(reverse("judging:run", args=[run.pk])).content.decode()
    counts = (JudgeRun.objects.count(), Verdict.objects.count())
    again = run_command(*IMPORT, "--new-run", "second opinion", second)
    assert f'already there as run {run.pk} "second opinion"; nothing imported' in again
    other = write(tmp_path, "v3.jsonl", jsonl(line("c1", "correct_amount", "ABSTAIN")))
    with pytest.raises(CommandError, match=f'judge "ext" already has a run "second opinion" \\(run {run.pk}\\)'):
        run_command(*IMPORT, "--new-run", "second opinion", other)
    with pytest.raises(CommandError, match='field "new run": must not start or end with spaces'):
        call_command(*IMPORT, "--new-run", " ", other)
    assert (JudgeRun.objects.count(), Verdict.objects.count()) == counts


def test_new_verdicts_beside_ones_already_there_are_imported_alone(tmp_path, judged_set):
    run_command(*IMPORT, write(tmp_path, "v1.jsonl", jsonl(line("c1", "correct_amount", "FAIL"))))
    grown = jsonl(line("c1", "correct_amount", "FAIL"), line("c2", "next_step", "PASS", agent_version="v2"))
    out = run_command(*IMPORT, write(tmp_path, "v2.jsonl", grown))
    assert "1 verdict imported as run" in out and "; 1 already there." in out
    assert JudgeRun.objects.order_by("pk").last().verdicts.count() == 1
    assert "already there; nothing imported" in run_command(*IMPORT, write(tmp_path, "v3.jsonl", grown))


def test_a_verdict_csv_with_bad_cells_or_columns_is_refused_cell_by_cell(tmp_path, judged_set):
    rows = (
        "case_id,agent_version,criterion,sample,outcome,evidence,raw,cache_hit,tokens_in\n"
        "c1,default,correct_amount,x,PASS,NONE,,false,1\n"
        "c1,default,next_step,0,PASS,NONE,,maybe,1\n"
        "c2,v2,next_step,0,pass,NONE,,true,1.5\n"
    )
    with pytest.raises(CommandError) as failure:
        run_command(*IMPORT, write(tmp_path, "v.csv", rows))
    text = str(failure.value)
    assert "v.csv, line 2, field \"sample\": must be a whole number, not 'x'" in text
    assert "v.csv, line 3, field \"cache_hit\": must be true or false, not 'maybe'" in text
    assert "v.csv, line 4, field \"tokens_in\": must be a whole number, not '1.5'" in text
    with pytest.raises(
        CommandError, match='v.csv, line 1, field "outcom": unknown column \\(did you mean "outcome"\\?\\)'
    ):
        run_command(*IMPORT, write(tmp_path, "v.csv", "case_id,criterion,outcom\nc1,next_step,PASS\n"))
    assert not JudgeConfig.objects.exists() and not Verdict.objects.exists()


def adk_result(camel: bool = False) -> dict:
    def score(rubric_id, value, rationale="because"):
        return {"rubric_id": rubric_id, "rationale": rationale, "score": value}

    doc = {
        "eval_set_result_id": "r1",
        "eval_set_id": "support",
        "eval_case_results": [
            {
                "eval_set_id": "support",
                "eval_id": "c1",
                "final_eval_status": 1,
                "overall_eval_metric_results": [
                    {"metric_name": "tool_trajectory_avg_score", "threshold": 1.0, "score": 1.0, "eval_status": 1},
                    {
                        "metric_name": "rubric_based_final_response_quality_v1",
                        "threshold": 0.8,
                        "score": 0.5,
                        "eval_status": 2,
                        "details": {"rubric_scores": [score("correct_amount", 1.0), score("next_step", 0.0)]},
                    },
                ],
                "eval_metric_result_per_invocation": [{"actual_invocation": {}, "eval_metric_results": []}],
                "session_id": "s1",
            },
            {
                "eval_set_id": "support",
                "eval_id": "c2",
                "final_eval_status": 2,
                "overall_eval_metric_results": [
                    {
                        "metric_name": "rubric_based_final_response_quality_v1",
                        "threshold": 0.8,
                        "eval_status": 2,
                        "details": {"rubric_scores": [score("correct_amount", None)]},
                    },
                    {
                        "metric_name": "rubric_based_tool_use_quality_v1",
                        "threshold": 0.8,
                        "eval_status": 2,
                        "details": {"rubric_scores": [score("next_step", 0.6)]},
                    },
                ],
                "eval_metric_result_per_invocation": [],
                "session_id": "s2",
            },
        ],
    }
    if camel:
        text = json.dumps(doc)
        for snake, camel_key in [
            ("eval_set_result_id", "evalSetResultId"),
            ("eval_case_results", "evalCaseResults"),
            ("overall_eval_metric_results", "overallEvalMetricResults"),
            ("rubric_scores", "rubricScores"),
            ("rubric_id", "rubricId"),
            ("metric_name", "metricName"),
            ("eval_id", "evalId"),
        ]:
            text = text.replace(f'"{snake}"', f'"{camel_key}"')
        doc = json.loads(text)
    return doc


@pytest.mark.parametrize("variant", ["snake", "camel", "double-encoded"])
def test_an_adk_eval_result_becomes_verdicts_per_rubric(tmp_path, judged_set, variant):
    doc = adk_result(camel=variant == "camel")
    content = json.dumps(json.dumps(doc)) if variant == "double-encoded" else json.dumps(doc, indent=2)
    path = write(tmp_path, "run.evalset_result.json", content)
    run_command(
        "import_verdicts",
        "--eval-set",
        "support",
        "--rubric",
        "refund@1",
        "--judge",
        "adk",
        "--agent-version",
        "default",
        path,
    )
    got = {
        (v.output.case.case_id, v.criterion.key): (v.outcome, v.error_reason)
        for v in Verdict.objects.select_related("output__case", "criterion")
    }
    assert got == {
        ("c1", "correct_amount"): ("PASS", ""),
        ("c1", "next_step"): ("FAIL", ""),
        ("c2", "correct_amount"): ("ERROR", "ADK did not score this rubric (score is missing)"),
        ("c2", "next_step"): ("ERROR", "ADK score 0.6 is neither 1 (PASS) nor 0 (FAIL)"),
    }
    v = Verdict.objects.get(output__case__case_id="c1", criterion__key="correct_amount")
    assert json.loads(v.raw_output)["rationale"] == "because" and v.evidence_found is None


def test_an_adk_result_naming_an_unknown_rubric_is_refused(tmp_path, judged_set):
    doc = adk_result()
    doc["eval_case_results"][0]["overall_eval_metric_results"][1]["details"]["rubric_scores"][0]["rubric_id"] = "tone"
    path = write(tmp_path, "run.evalset_result.json", json.dumps(doc, indent=2))
    with pytest.raises(CommandError) as failure:
        run_command(
            "import_verdicts",
            "--eval-set",
            "support",
            "--rubric",
            "refund@1",
            "--judge",
            "adk",
            "--agent-version",
            "default",
            path,
        )
    assert '"tone" is not a criterion of the rubric; its criteria are correct_amount, next_step' in str(failure.value)
    assert "line 23" in str(failure.value)  # where that rubric score object starts in the indented file
    assert not Verdict.objects.exists()


def test_an_adk_result_without_rubric_scores_says_what_gives_verdicts(tmp_path, judged_set):
    doc = adk_result()
    for case in doc["eval_case_results"]:
        case["overall_eval_metric_results"] = [m for m in case["overall_eval_metric_results"] if "details" not in m]
    path = write(tmp_path, "run.evalset_result.json", json.dumps(doc))
    with pytest.raises(CommandError, match="no per-rubric scores anywhere in this ADK result"):
        run_command(
            "import_verdicts",
            "--eval-set",
            "support",
            "--rubric",
            "refund@1",
            "--judge",
            "adk",
            "--agent-version",
            "default",
            path,
        )


@pytest.mark.django_db(transaction=True)
def test_export_and_import_round_trip(tmp_path):
    scope = instrument_scope()
    judge_in_process(scope)
    first = io.StringIO()
    n = export_verdicts(
        eval_set=scope.eval_set,
        rubric_version=scope.rubric_version,
        judge_config=scope.judge_config,
        fmt="jsonl",
        stream=first,
    )
    assert n == 4
    records = [json.loads(x) for x in first.getvalue().splitlines()]
    assert list(records[0]) == list(EXPORT_COLUMNS)
    assert records[0]["case_id"] == "case-001" and records[0]["outcome"] == "PASS" and records[0]["cache_hit"] is False
    path = write(tmp_path, "verdicts.jsonl", first.getvalue())
    run_command("import_verdicts", "--eval-set", scope.eval_set.name, "--rubric", "refund@1", "--judge", "copy", path)
    second = io.StringIO()
    export_verdicts(
        eval_set=scope.eval_set,
        rubric_version=scope.rubric_version,
        judge_config=JudgeConfig.objects.get(name="copy"),
        fmt="jsonl",
        stream=second,
    )
    assert second.getvalue() == first.getvalue()
    as_csv = io.StringIO()
    export_verdicts(
        eval_set=scope.eval_set,
        rubric_version=scope.rubric_version,
        judge_config=scope.judge_config,
        fmt="csv",
        stream=as_csv,
    )
    rows = as_csv.getvalue().splitlines()
    assert rows[0] == ",".join(EXPORT_COLUMNS) and len(rows) == 5 and rows[1].endswith(",false")


@pytest.mark.django_db(transaction=True)
def test_export_takes_each_verdict_from_the_latest_run_that_has_it(tmp_path):
    scope = instrument_scope()
    judge_in_process(scope)
    judged = io.StringIO()
    export_verdicts(
        eval_set=scope.eval_set,
        rubric_version=scope.rubric_version,
        judge_config=scope.judge_config,
        fmt="jsonl",
        stream=judged,
    )
    # The judge's verdicts imported as an imported config's (imports never write into the instrument itself); a later
    # import, asked for as a run of its own, changes one verdict; everything else still reads from the first.
    scope_args = ("--eval-set", scope.eval_set.name, "--rubric", "refund@1", "--judge", "copy")
    run_command("import_verdicts", *scope_args, write(tmp_path, "judged.jsonl", judged.getvalue()))
    path = write(tmp_path, "v.jsonl", jsonl(line("case-002", "next_step", "PASS", "No idea.")))
    run_command("import_verdicts", *scope_args, "--new-run", "second opinion", path)
    out = io.StringIO()
    export_verdicts(
        eval_set=scope.eval_set,
        rubric_version=scope.rubric_version,
        judge_config=JudgeConfig.objects.get(name="copy"),
        fmt="jsonl",
        stream=out,
    )
    got = [(r["case_id"], r["criterion"], r["outcome"]) for r in map(json.loads, out.getvalue().splitlines())]
    assert got == [
        ("case-001", "correct_amount", "PASS"),
        ("case-001", "next_step", "PASS"),
        ("case-002", "correct_amount", "FAIL"),
        ("case-002", "next_step", "PASS"),
    ]
    with pytest.raises(ValueError, match="jsonl or csv"):
        export_verdicts(
            eval_set=scope.eval_set,
            rubric_version=scope.rubric_version,
            judge_config=scope.judge_config,
            fmt="adk",
            stream=io.StringIO(),
        )


@pytest.mark.django_db(transaction=True)
def test_run_judge_says_so_when_the_broker_is_unreachable(monkeypatch):
    from kombu.exceptions import OperationalError

    from judging import tasks

    def refuse(*args, **kwargs):
        raise OperationalError("Error 111 connecting to 127.0.0.1:6379. Connection refused.")

    monkeypatch.setattr(tasks.run_lane, "apply_async", refuse)  # what Celery raises once its publish retries end
    scope = instrument_scope()
    with pytest.raises(CommandError) as failure:
        run_command("run_judge", "--eval-set", scope.eval_set.name, "--rubric", "refund@1", "--judge", "inst")
    assert "failed to start: could not reach the Celery broker to start the run (OperationalError)" in str(
        failure.value
    )
    assert failure.value.returncode == 2
    assert JudgeRun.objects.get().status == "failed"
