"""The Import page takes judge verdicts too: JSONL/CSV, ADK results and Inspect AI logs' scores, into an imported
judge config only (the provenance rule of import_verdicts), lead-only, with CSRF, the result in view."""

from __future__ import annotations

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.test import Client
from django.urls import reverse

from calibration.gate.verdict_sources import verdict_sources
from evals.models import RubricVersion
from formats.case_import import import_cases
from formats.readers import open_source
from judging.models import JudgeConfig, JudgeRun, Verdict
from tests.factories import default_workspace, make_eval_set, make_judge, make_output, make_rubric_version
from tests.io_helpers import jsonl

pytestmark = pytest.mark.django_db
URL = reverse("formats:upload")


@pytest.fixture
def scope():
    """Two outputs of eval set "refunds" and rubric refund@1 (criterion correct_amount)."""
    es = make_eval_set("refunds")
    for case_id in ("r-1", "r-2"):
        make_output(es, case_id=case_id, agent_version="v1", response="Refunded $40.00 to your card.")
    return es, make_rubric_version("refund", "1")


def verdict_lines() -> bytes:
    records = [
        {"case_id": "r-1", "agent_version": "v1", "criterion": "correct_amount", "outcome": "PASS",
         "evidence": "$40.00", "raw": "PASS"},
        {"case_id": "r-2", "agent_version": "v1", "criterion": "correct_amount", "outcome": "FAIL",
         "evidence": "", "raw": "FAIL"},
    ]  # fmt: skip
    return jsonl(*records).encode()


def post_verdicts(client, file: SimpleUploadedFile, judge: str = "elsewhere", **fields):
    rubric = RubricVersion.objects.get(rubric__name="refund", version="1")
    data = {"kind": "verdicts", "verdicts-eval_set": "refunds", "verdicts-rubric": rubric.pk, "verdicts-judge": judge}
    data.update({f"verdicts-{k}": v for k, v in fields.items()})
    return client.post(URL, {**data, "verdicts-file": file}, headers={"HX-Request": "true"})


def test_the_lead_sees_a_verdicts_card_naming_the_imported_configs(client, lead, scope):
    make_judge("ci-judge")  # imported
    make_judge("a-model", backend=JudgeConfig.Backend.OPENAI)
    client.force_login(lead)
    page = client.get(URL).content.decode()
    assert 'id="upload-verdicts"' in page and 'name="kind" value="verdicts"' in page
    assert '<option value="ci-judge">' in page and '<option value="a-model">' not in page


def test_a_lead_imports_jsonl_verdicts_into_a_new_imported_config_and_sees_the_result(client, lead, scope):
    client.force_login(lead)
    response = post_verdicts(client, SimpleUploadedFile("verdicts.jsonl", verdict_lines()))
    body = response.content.decode()
    assert response.status_code == 200 and 'data-result="ok"' in body and 'id="upload-result-verdicts"' in body
    assert "Calibrate" in body  # the next step
    run = JudgeRun.objects.get()
    assert run.judge_config.name == "elsewhere" and run.judge_config.backend == JudgeConfig.Backend.IMPORTED
    assert run.imported_via == "page" and run.source_name == "verdicts.jsonl"
    assert sorted(Verdict.objects.values_list("output__case__case_id", "outcome")) == [("r-1", "PASS"), ("r-2", "FAIL")]
    (source,) = verdict_sources({run.pk: 2})
    assert source.describe() == f"run {run.pk} (imported on the Import page, verdicts.jsonl): 2"
    again = post_verdicts(client, SimpleUploadedFile("verdicts.jsonl", verdict_lines()))
    assert 'data-result="ok"' in again.content.decode() and Verdict.objects.count() == 2  # idempotent


def test_a_model_judge_config_is_refused_and_nothing_is_written(client, lead, scope):
    make_judge("gpt-judge", backend=JudgeConfig.Backend.OPENAI)
    client.force_login(lead)
    body = post_verdicts(client, SimpleUploadedFile("verdicts.jsonl", verdict_lines()), judge="gpt-judge")
    text = body.content.decode().replace("&quot;", '"')
    assert 'data-result="failed"' in text and "its verdicts come only from its own judge runs" in text
    assert "Nothing was imported." in text
    assert not Verdict.objects.exists() and not JudgeRun.objects.exists()


@pytest.mark.parametrize("who", ["annotator", "reviewer"])
def test_only_a_lead_may_import_verdicts(client, request, who, scope):
    client.force_login(request.getfixturevalue(who))
    assert post_verdicts(client, SimpleUploadedFile("verdicts.jsonl", verdict_lines())).status_code == 403
    assert not Verdict.objects.exists() and not JudgeConfig.objects.exists()


def test_a_post_without_the_csrf_token_is_refused(lead, scope):
    client = Client(enforce_csrf_checks=True)
    client.force_login(lead)
    assert post_verdicts(client, SimpleUploadedFile("verdicts.jsonl", verdict_lines())).status_code == 403
    assert not Verdict.objects.exists()


def test_a_bad_score_mapping_is_a_form_error_and_reads_no_file(client, lead, scope):
    client.force_login(lead)
    body = post_verdicts(client, SimpleUploadedFile("verdicts.jsonl", verdict_lines()), scorers="no equals sign")
    text = body.content.decode()
    assert 'data-result="invalid"' in text and "Inspect AI scorers" in text
    assert not JudgeRun.objects.exists()


def test_inspect_options_are_folded_until_one_is_used(client, lead, scope):
    client.force_login(lead)
    page = client.get(URL).content.decode()
    folded = page.split('<details class="upload-options"', 1)[1].split("</details>", 1)[0]
    assert folded.startswith(">")  # closed: nobody filled them in
    assert 'name="verdicts-scorers"' in folded and 'name="verdicts-skip"' in folded
    assert 'name="verdicts-file"' not in folded and 'name="verdicts-judge"' not in folded
    # A full-page post (no htmx) whose scorers are refused shows them open, beside the error.
    rubric = RubricVersion.objects.get(rubric__name="refund", version="1")
    data = {"kind": "verdicts", "verdicts-eval_set": "refunds", "verdicts-rubric": rubric.pk, "verdicts-judge": "x"}
    data.update({"verdicts-scorers": "no equals sign", "verdicts-file": SimpleUploadedFile("v.jsonl", b"{}")})
    page = client.post(URL, data).content.decode()
    assert '<details class="upload-options" open>' in page
    # Negative control: the other cards have no folded group.
    assert page.count('<details class="upload-options"') == 1


def test_an_inspect_logs_scores_become_verdicts_through_the_page(client, lead, refund_logs, offline):
    with open_source(refund_logs["eval"]) as src:
        import_cases(workspace=default_workspace(), source=src, eval_set_name="refunds")
    make_rubric_version("refund", "1")
    client.force_login(lead)
    log = SimpleUploadedFile("refund.eval", refund_logs["eval"].read_bytes())
    body = post_verdicts(client, log, judge="inspect-grader", scorers="model_graded_qa=correct_amount")
    assert 'data-result="ok"' in body.content.decode()
    assert Verdict.objects.filter(judge_config__name="inspect-grader").count() == 3
    assert JudgeRun.objects.get().imported_via == "page"
