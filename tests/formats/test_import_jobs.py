"""Large files from the Import page are imported by a real Celery worker, with progress, all or nothing.

A legal 9.7 MB file of 200,000 lines with an error on its last line outlasted the web request (a 500
after gunicorn's 30 s). Now a file above ICEWATER_UPLOAD_INLINE_MB becomes an import job; the page polls
its progress and ends with the same messages as an import in the request. The worker reads the test
database, so the data is committed: transactional_db.
"""

from __future__ import annotations

import json
import time

import pytest
from django.core.cache import caches
from django.core.files.uploadedfile import SimpleUploadedFile
from django.urls import reverse

from evals.models import Case
from formats.models import ImportJob
from tests.factories import default_workspace
from tests.io_helpers import row_counts
from tests.services import Worker

pytestmark = [pytest.mark.celery, pytest.mark.django_db(transaction=True)]
URL = reverse("formats:upload")
JOB_TIMEOUT_S = 180


@pytest.fixture
def worker(tmp_path):
    from config.celery import app

    app.control.purge()
    started = Worker(tmp_path, concurrency=1)
    yield started
    started.stop()
    app.control.purge()


def cases_lines(count: int, last: dict | None = None) -> bytes:
    lines = [
        json.dumps({"case_id": f"c{i:06d}", "input": f"Question {i}?", "response": "An answer."}) for i in range(count)
    ]
    if last is not None:
        lines[-1] = json.dumps(last)
    return ("\n".join(lines) + "\n").encode()


def post_cases(client, content: bytes, **headers):
    data = {
        "kind": "cases",
        "cases-eval_set": "big",
        "cases-agent_version": "",
        "cases-file": SimpleUploadedFile("big.jsonl", content),
    }
    return client.post(URL, data, headers=headers)


def wait_for_job(client, job: ImportJob):
    """Poll the job's region as the page does, until it answers 286 (htmx: stop polling)."""
    url = reverse("formats:import_job", args=[job.pk])
    deadline = time.monotonic() + JOB_TIMEOUT_S
    while time.monotonic() < deadline:
        response = client.get(url, headers={"HX-Request": "true"})
        if response.status_code == 286:
            return response.content.decode()
        assert response.status_code == 200 and 'hx-trigger="every 1s"' in response.content.decode()
        time.sleep(0.3)
    raise AssertionError(f"job {job.pk} still {ImportJob.objects.get(pk=job.pk).status} after {JOB_TIMEOUT_S} s")


def test_a_large_file_with_an_error_on_its_last_line_fails_in_the_background_and_writes_nothing(
    client, lead, worker, settings
):
    settings.ICEWATER_UPLOAD_INLINE_BYTES = 100_000
    client.force_login(lead)
    before = row_counts()
    content = cases_lines(50_000, last={"case_id": "bad", "input": "Q", "response": "A", "latency_ms": "slow"})
    assert len(content) > 2_000_000
    response = post_cases(client, content, **{"HX-Request": "true"})
    body = response.content.decode()
    job = ImportJob.objects.get()
    assert response.status_code == 200 and f'hx-get="{reverse("formats:import_job", args=[job.pk])}"' in body
    assert "<progress" in body and "big.jsonl" in body
    final = wait_for_job(client, job).replace("&quot;", '"').replace("&gt;", ">")
    assert 'data-result="failed"' in final and "hx-trigger" not in final
    assert 'big.jsonl, line 50000, field "latency_ms"' in final and "Nothing was imported." in final
    assert row_counts() == before
    job.refresh_from_db()
    assert job.status == "failed" and bytes(job.content) == b""


def test_a_large_legal_file_imports_in_the_background_like_a_small_one(client, lead, worker, settings):
    settings.ICEWATER_UPLOAD_INLINE_BYTES = 100_000
    client.force_login(lead)
    page = post_cases(client, cases_lines(20_000)).content.decode()  # without htmx: the whole page
    job = ImportJob.objects.get()
    assert "<html" in page and f'href="{reverse("formats:import_job", args=[job.pk])}"' in page
    final = wait_for_job(client, job).replace("&quot;", '"').replace("&gt;", ">")
    assert 'data-result="ok"' in final
    assert 'big.jsonl -> eval set "big" (new): 20,000 cases created' in final
    assert "Open a labeling queue" in final
    assert Case.objects.filter(eval_set__name="big").count() == 20_000
    # The whole page of a finished job (no JavaScript) shows the same result, without polling.
    whole = client.get(reverse("formats:import_job", args=[job.pk])).content.decode()
    assert "<html" in whole and "20,000 cases created" in whole and "hx-trigger" not in whole


def test_a_small_file_still_imports_in_the_request(client, lead, settings):
    settings.ICEWATER_UPLOAD_INLINE_BYTES = 100_000
    client.force_login(lead)
    page = post_cases(client, cases_lines(100)).content.decode()
    assert 'data-result="ok"' in page and not ImportJob.objects.exists()
    assert Case.objects.filter(eval_set__name="big").count() == 100


def test_the_page_shows_how_far_a_running_import_has_read(client, lead):
    job = ImportJob.objects.create(
        kind="cases",
        file_name="big.jsonl",
        size=4_000_000,
        status="running",
        created_by=lead,
        options={},
        workspace=default_workspace(),
    )
    caches["progress"].set(f"import-job-{job.pk}", 1_000_000)
    client.force_login(lead)
    body = client.get(reverse("formats:import_job", args=[job.pk]), headers={"HX-Request": "true"}).content.decode()
    assert 'max="4000000" value="1000000"' in body and "importing, 976.6\xa0KB of 3.8\xa0MB read" in body


def test_only_leads_see_import_jobs(client, annotator, lead):
    job = ImportJob.objects.create(
        kind="cases", file_name="x.jsonl", size=1, created_by=lead, options={}, workspace=default_workspace()
    )
    client.force_login(annotator)
    assert client.get(reverse("formats:import_job", args=[job.pk])).status_code == 403
