"""The scores of an Inspect AI log as verdicts: mapping, ERROR for what does not map, and calibration end to end."""

from __future__ import annotations

import io
import json

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError

from evals.problems import ImportFailed
from formats.case_import import import_cases
from formats.inspect_scores import ScoreMapping
from formats.readers import open_source
from formats.verdicts import import_verdicts
from judging.models import JudgeConfig, Verdict
from tests.factories import default_workspace, make_rubric_version
from tests.inspect_helpers import INSPECT_MODEL, REFUND_SAMPLES, write_log
from tests.io_helpers import jsonl, source

pytestmark = pytest.mark.django_db

CRITERIA = [{"key": "correct_amount", "definition": "The amount is right."}, {"key": "next_step", "definition": "x"}]


def load_cases(path) -> None:
    with open_source(path) as src:
        import_cases(workspace=default_workspace(), source=src, eval_set_name="refunds")


def verdicts_from(path, mapping: ScoreMapping | None = None, **kwargs):
    with open_source(path) as src:
        return import_verdicts(
            workspace=default_workspace(),
            source=src,
            eval_set_name="refunds",
            rubric_ref="refund@1",
            judge_name="inspect-grader",
            score_mapping=mapping,
            **kwargs,
        )


def outcomes() -> dict[tuple[str, str], tuple[str, str]]:
    return {
        (v.output.case.case_id, v.criterion.key): (v.outcome, v.error_reason)
        for v in Verdict.objects.select_related("output__case", "criterion")
    }


def test_model_graded_scores_become_verdicts_of_the_mapped_criterion(refund_logs, offline):
    load_cases(refund_logs["eval"])
    make_rubric_version("refund", "1", criteria=CRITERIA)
    mapping = ScoreMapping.parse(scorers=["model_graded_qa=correct_amount"])
    report = verdicts_from(refund_logs["eval"], mapping)
    assert report.counts["verdicts_created"] == 3
    assert outcomes() == {
        ("r-001", "correct_amount"): ("PASS", ""),
        ("r-002", "correct_amount"): ("FAIL", ""),
        ("r-003", "correct_amount"): ("FAIL", ""),
    }
    verdict = Verdict.objects.get(output__case__case_id="r-002")
    assert verdict.output.agent_version == INSPECT_MODEL and verdict.evidence == "" and verdict.evidence_found is None
    raw = json.loads(verdict.raw_output)
    assert raw["scorer"] == "model_graded_qa" and raw["value"] == "I" and "GRADE: I" in raw["explanation"]
    assert JudgeConfig.objects.get(name="inspect-grader").backend == "imported"
    again = verdicts_from(refund_logs["json"], mapping)  # the .json log of the same run: the same verdicts
    assert again.counts["verdicts_created"] == 0 and Verdict.objects.count() == 3


def test_a_scorer_named_like_a_criterion_needs_no_mapping_and_odd_values_are_errors(offline, tmp_path):
    samples = [
        {**REFUND_SAMPLES[0], "scores": {"correct_amount": "C", "next_step": True}},
        {**REFUND_SAMPLES[1], "scores": {"correct_amount": "P", "next_step": 0.5}},
        {**REFUND_SAMPLES[2], "scores": {"correct_amount": "I"}},  # next_step did not score this one
    ]
    path = write_log(tmp_path, samples, model_graded=False, scorers=("correct_amount", "next_step"))
    load_cases(path)
    make_rubric_version("refund", "1", criteria=CRITERIA)
    verdicts_from(path)
    got = outcomes()
    assert got[("r-001", "correct_amount")] == ("PASS", "") and got[("r-001", "next_step")] == ("PASS", "")
    assert got[("r-003", "correct_amount")] == ("FAIL", "")
    assert got[("r-002", "correct_amount")][0] == "ERROR"  # partial credit is not a PASS/FAIL answer
    assert "Inspect score P has no outcome" in got[("r-002", "correct_amount")][1]
    assert "--score P=OUTCOME" in got[("r-002", "correct_amount")][1]
    assert got[("r-002", "next_step")][0] == "ERROR" and "0.5" in got[("r-002", "next_step")][1]
    assert got[("r-003", "next_step")] == ("ERROR", "Inspect has no next_step score for this sample")


def test_the_value_mapping_is_configurable_on_the_command_line(offline, tmp_path):
    samples = [{**s, "scores": {"correct_amount": v}} for s, v in zip(REFUND_SAMPLES, ["P", "C", "N"], strict=True)]
    path = write_log(tmp_path, samples, model_graded=False, scorers=("correct_amount",))
    load_cases(path)
    make_rubric_version("refund", "1", criteria=CRITERIA)
    out = io.StringIO()
    call_command(
        "import_verdicts",
        *("--eval-set", "refunds", "--rubric", "refund@1", "--judge", "inspect-grader"),
        *("--score", "P=FAIL", "--score", "C=FAIL", "--score", "N=ABSTAIN", str(path)),
        stdout=out,
    )
    assert "3 verdicts imported" in out.getvalue()
    got = {case: outcome for (case, _), (outcome, _) in outcomes().items()}
    assert got == {"r-001": "FAIL", "r-002": "FAIL", "r-003": "ABSTAIN"}


def test_a_scorer_that_is_no_criterion_is_refused_unless_mapped_or_skipped(refund_logs, offline):
    load_cases(refund_logs["eval"])
    make_rubric_version("refund", "1", criteria=CRITERIA)
    with pytest.raises(ImportFailed) as exc:
        verdicts_from(refund_logs["eval"])
    message = str(exc.value)
    assert 'field "scorers.model_graded_qa"' in message and '"model_graded_qa" is not a criterion' in message
    assert "--scorer model_graded_qa=CRITERION" in message and "--skip-scorer model_graded_qa" in message
    with pytest.raises(ImportFailed) as exc:
        verdicts_from(refund_logs["eval"], ScoreMapping.parse(skip=["model_graded_qa"]))
    assert "every scorer of the log is left out" in str(exc.value)
    assert not Verdict.objects.exists() and not JudgeConfig.objects.exists()


@pytest.mark.parametrize(
    "flags,fragment",
    [
        (["--scorer", "model_graded_qa"], "must be written --scorer NAME=CRITERION"),
        (["--score", "C=pass"], "'pass' is not one of PASS, FAIL"),
        (["--scorer", "nope=correct_amount"], "the log has no scorer 'nope'"),
        (["--scorer", "model_graded_qa=correct_amount", "--skip-scorer", "model_graded_qa"], "both mapped and skipped"),
    ],
)
def test_bad_mapping_flags_get_a_clear_message_and_write_nothing(refund_logs, offline, flags, fragment):
    load_cases(refund_logs["eval"])
    make_rubric_version("refund", "1", criteria=CRITERIA)
    with pytest.raises(CommandError) as exc:
        call_command(
            "import_verdicts",
            *("--eval-set", "refunds", "--rubric", "refund@1", "--judge", "inspect-grader"),
            *flags,
            str(refund_logs["eval"]),
        )
    assert fragment in str(exc.value)
    assert not Verdict.objects.exists() and not JudgeConfig.objects.exists()


def test_verdicts_for_outputs_of_another_agent_version_are_refused(refund_logs, offline):
    load_cases(refund_logs["eval"])
    make_rubric_version("refund", "1", criteria=CRITERIA)
    mapping = ScoreMapping.parse(scorers=["model_graded_qa=correct_amount"])
    with pytest.raises(ImportFailed) as exc:
        verdicts_from(refund_logs["eval"], mapping, default_agent_version="v9")
    assert 'has no output of agent version "v9"' in str(exc.value)
    assert not Verdict.objects.exists()


def test_a_jsonl_verdicts_file_is_still_read_as_jsonl(refund_logs, offline):
    load_cases(refund_logs["eval"])
    make_rubric_version("refund", "1", criteria=CRITERIA)
    line = {"case_id": "r-001", "agent_version": INSPECT_MODEL, "criterion": "next_step", "outcome": "PASS"}
    report = import_verdicts(
        workspace=default_workspace(),
        source=source("v.jsonl", jsonl(line)),
        eval_set_name="refunds",
        rubric_ref="refund@1",
        judge_name="j",
    )
    assert report.counts["verdicts_created"] == 1


def test_an_inspect_log_calibrates_end_to_end(refund_logs, offline):
    """Cases and the grader's verdicts from one log, gold labels from people, then the report."""
    call_command("import_cases", "--eval-set", "refunds", str(refund_logs["eval"]), stdout=io.StringIO())
    make_rubric_version("refund", "1", criteria=CRITERIA)
    gold = [  # the people say r-003 is right after all: the grader's I there is a false fail
        {
            "case_id": c,
            "agent_version": INSPECT_MODEL,
            "criterion": "correct_amount",
            "adjudicator": "lee",
            "outcome": o,
        }
        for c, o in [("r-001", "PASS"), ("r-002", "FAIL"), ("r-003", "PASS")]
    ]
    from formats.label_import import import_labels

    import_labels(
        workspace=default_workspace(),
        source=source("gold.jsonl", jsonl(*gold)),
        eval_set_name="refunds",
        rubric_ref="refund@1",
    )
    call_command(
        "import_verdicts",
        *("--eval-set", "refunds", "--rubric", "refund@1", "--judge", "inspect-grader"),
        *("--scorer", "model_graded_qa=correct_amount", str(refund_logs["eval"])),
        stdout=io.StringIO(),
    )
    out = io.StringIO()
    call_command(
        "calibration_report",
        *("--eval-set", "refunds", "--rubric", "refund@1", "--judge", "inspect-grader", "--format", "json"),
        stdout=out,
    )
    row = next(r for r in json.loads(out.getvalue())["criteria"] if r["criterion"] == "correct_amount")
    assert (row["n"], row["true_pass"], row["true_fail"], row["false_fail"], row["false_pass"]) == (3, 1, 1, 1, 0)
    # By hand: agreement 2/3; chance (1/3 * 2/3) + (2/3 * 1/3) = 4/9; kappa (2/3 - 4/9) / (5/9) = 0.4.
    assert row["kappa"] == pytest.approx(0.4)
