"""Every page that finishes something links to the next step; a run that has ended shows no Cancel button."""

from __future__ import annotations

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.urls import reverse

from evals.models import EvalSet, RubricVersion
from formats.case_import import import_cases
from formats.rubric_import import import_rubric
from judging.models import JudgeRun
from tests.factories import default_workspace, make_eval_set, make_judge, make_rubric_version
from tests.io_helpers import DATA, data_source

pytestmark = pytest.mark.django_db
UPLOAD = reverse("formats:upload")


def upload(name: str, content: bytes | None = None) -> SimpleUploadedFile:
    return SimpleUploadedFile(name, content if content is not None else (DATA / name).read_bytes())


def next_step(body: str) -> str:
    start = body.find("data-next-step")
    return body[start : body.find("</p>", start)] if start >= 0 else ""


def test_a_cases_import_links_to_its_labeling_queue_and_to_a_judge_run(client, lead):
    client.force_login(lead)
    data = {"kind": "cases", "cases-eval_set": "refunds", "cases-agent_version": "", "cases-file": upload("cases.csv")}
    step = next_step(client.post(UPLOAD, data).content.decode())
    es = EvalSet.objects.get(name="refunds")
    assert f"{reverse('labeling:queues')}#queue-{es.pk}" in step
    assert f"{reverse('judging:index')}?eval_set=refunds#start-run" in step  # the start form picks eval sets by name


def test_a_labels_import_links_to_adjudication_and_a_judge_run(client, lead):
    import_rubric(workspace=default_workspace(), source=data_source("rubric.json"))
    import_cases(workspace=default_workspace(), source=data_source("cases.jsonl"), eval_set_name="refunds")
    rv, es = RubricVersion.objects.by_ref("refund-support@1", default_workspace()), EvalSet.objects.get(name="refunds")
    client.force_login(lead)
    data = {
        "kind": "labels",
        "labels-eval_set": "refunds",
        "labels-rubric": rv.pk,
        "labels-agent_version": "default",
        "labels-file": upload("labels.jsonl"),
    }
    step = next_step(client.post(UPLOAD, data).content.decode())
    query = f"?eval_set={es.pk}&amp;rubric_version={rv.pk}"
    assert reverse("labeling:adjudication_queue") + query in step
    assert reverse("judging:index") + f"?eval_set=refunds&amp;rubric_version={rv.pk}" in step


def test_a_rubric_import_links_to_the_queues_and_a_failed_import_to_nothing(client, lead):
    client.force_login(lead)
    ok = client.post(UPLOAD, {"kind": "rubric", "rubric-file": upload("rubric.json")}).content.decode()
    assert reverse("labeling:queues") in next_step(ok)
    bad = client.post(UPLOAD, {"kind": "rubric", "rubric-file": upload("r.json", b"{nope")}).content.decode()
    assert 'data-result="failed"' in bad and next_step(bad) == ""


def test_the_start_form_takes_the_eval_set_and_rubric_version_from_the_link(client, lead):
    make_eval_set("refunds")
    rv = make_rubric_version("refund", "1")
    client.force_login(lead)
    body = client.get(reverse("judging:index") + f"?eval_set=refunds&rubric_version={rv.pk}").content.decode()
    assert '<option value="refunds" selected>' in body and f'<option value="{rv.pk}" selected>' in body
    assert client.get(reverse("judging:index") + "?eval_set=abc&rubric_version=-4").status_code == 200


@pytest.fixture
def run(lead):
    es, rv, judge = make_eval_set("cal"), make_rubric_version("refund", "1"), make_judge("gpt-judge")
    return JudgeRun.objects.create(eval_set=es, rubric_version=rv, judge_config=judge, status=JudgeRun.Status.QUEUED)


def pages(client, run) -> list[str]:
    """The run page and the panel its poll swaps in."""
    return [
        client.get(reverse("judging:run", args=[run.pk])).content.decode(),
        client.get(reverse("judging:run_progress", args=[run.pk]), headers={"HX-Request": "true"}).content.decode(),
    ]


def test_a_running_run_has_a_cancel_button_for_leads_and_no_next_step(client, lead, reviewer, run):
    client.force_login(lead)
    for body in pages(client, run):
        assert "Cancel the run" in body and "Calibration report" not in body
    client.force_login(reviewer)
    assert all("Cancel the run" not in body for body in pages(client, run))


def test_a_finished_run_links_to_its_calibration_report_and_the_gate_and_has_no_cancel(client, lead, run):
    JudgeRun.objects.filter(pk=run.pk).update(status=JudgeRun.Status.DONE)
    client.force_login(lead)
    report = reverse("calibration:report", args=[run.eval_set_id, run.rubric_version_id, run.judge_config_id])
    gate = f"{reverse('calibration:gate_run')}?eval_set={run.eval_set_id}&amp;rubric_version={run.rubric_version_id}"
    for body in pages(client, run):
        assert "Cancel the run" not in body and report in body and gate in body


def test_the_poll_of_a_finished_run_stops_and_brings_the_next_step(client, lead, run):
    client.force_login(lead)
    JudgeRun.objects.filter(pk=run.pk).update(status=JudgeRun.Status.DONE)
    response = client.get(reverse("judging:run_progress", args=[run.pk]), headers={"HX-Request": "true"})
    assert response.status_code == 286 and "Calibration report" in response.content.decode()


@pytest.mark.parametrize("status", [JudgeRun.Status.FAILED, JudgeRun.Status.CANCELLED])
def test_a_failed_or_cancelled_run_has_no_cancel_button_and_offers_a_new_start(client, lead, run, status):
    JudgeRun.objects.filter(pk=run.pk).update(status=status)
    client.force_login(lead)
    for body in pages(client, run):
        assert "Cancel the run" not in body and "Start it again" in body and "Calibration report" not in body
