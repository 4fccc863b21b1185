"""The Import page keeps workspaces apart (issue #36): its jobs belong to the workspace in use, another workspace's
job answers as a missing one, and its forms offer and accept one workspace's eval sets and rubric versions."""

from __future__ import annotations

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.urls import reverse

from formats.models import ImportJob
from tests.two_workspaces import MISSING, answer, options, same_as_missing, signed_in

pytestmark = pytest.mark.django_db
URL = reverse("formats:upload")


def test_another_workspaces_import_job_answers_as_a_missing_one(sides):
    a, b = sides
    client = signed_in(a.lead, a.workspace)
    other, missing = (
        reverse("formats:import_job", args=[b.import_job.pk]),
        reverse("formats:import_job", args=[MISSING]),
    )
    for htmx in (False, True):
        assert same_as_missing(client, "get", other, missing, htmx=htmx)[0] == 404
    # Negative control: alpha's own job is shown.
    assert client.get(reverse("formats:import_job", args=[a.import_job.pk])).status_code == 200


def test_the_forms_offer_and_accept_only_the_workspaces_rubric_versions(sides):
    a, b = sides
    client = signed_in(a.lead, a.workspace)
    page = client.get(URL).content.decode()
    assert options(page, "labels-rubric") == {"", str(a.rubric_version.pk)}

    def labels(rubric: int) -> tuple[int, bytes]:
        data = {
            "kind": "labels",
            "labels-eval_set": "refund-support",
            "labels-rubric": rubric,
            "labels-agent_version": "default",
            "labels-file": SimpleUploadedFile("labels.jsonl", b"{}\n"),
        }
        return answer(client, "post", URL, data, htmx=True)

    got = labels(b.rubric_version.pk)
    assert got == labels(MISSING) and b"Select a valid choice" in got[1]


def test_a_queued_import_belongs_to_the_workspace_in_use(sides, settings):
    a, b = sides
    settings.ICEWATER_UPLOAD_INLINE_BYTES = 1  # any file becomes a job (its worker runs on commit: not here)
    client = signed_in(b.lead, b.workspace)
    data = {"kind": "rubric", "rubric-file": SimpleUploadedFile("rubric.json", b'{"name": "x"}')}
    assert client.post(URL, data).status_code == 200
    job = ImportJob.objects.latest("pk")
    assert (job.workspace, job.file_name) == (b.workspace, "rubric.json")
    # Negative control: alpha's lead cannot follow it.
    assert signed_in(a.lead, a.workspace).get(reverse("formats:import_job", args=[job.pk])).status_code == 404
