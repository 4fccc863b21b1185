"""An Import page job runs in the workspace of the page that queued it (job.workspace), not in whatever
workspace is the only or the current one when a worker takes it (issue 36)."""

from __future__ import annotations

import json

import pytest

from evals.models import EvalSet, RubricVersion
from formats import import_jobs
from formats.models import ImportJob
from tests.factories import make_rubric_version, make_user, make_workspace
from tests.io_helpers import DATA

pytestmark = pytest.mark.django_db


def queue(kind: str, content: bytes, workspace, options: dict) -> ImportJob:
    lead = make_user(role="lead", workspace=workspace)
    return ImportJob.objects.create(
        kind=kind,
        file_name="f.jsonl" if kind != "rubric" else "r.json",
        content=content,
        size=len(content),
        options=options,
        created_by=lead,
        workspace=workspace,
    )


def test_a_job_imports_into_its_own_workspace_and_names_resolve_there():
    alpha, beta = make_workspace("alpha"), make_workspace("beta")
    rubric = (DATA / "rubric.json").read_bytes()
    cases = (DATA / "cases.jsonl").read_bytes()
    for job in (queue("rubric", rubric, beta, {}), queue("cases", cases, beta, {"eval_set": "refunds"})):
        import_jobs.run(job.pk)
        job.refresh_from_db()
        assert job.status == ImportJob.Status.DONE, job.result
    assert list(EvalSet.objects.values_list("workspace__slug", flat=True)) == ["beta"]
    assert RubricVersion.objects.get().rubric.workspace == beta
    # The page's next-step links point at beta's eval set.
    assert job.result["eval_set_id"] == EvalSet.objects.get(workspace=beta).pk
    # alpha has a rubric of the same name: a labels job of alpha does not see beta's eval set.
    make_rubric_version(name="refund-support", version="1", workspace=alpha)
    labels = queue(
        "labels", (DATA / "labels.jsonl").read_bytes(), alpha, {"eval_set": "refunds", "rubric": "refund-support@1"}
    )
    import_jobs.run(labels.pk)
    labels.refresh_from_db()
    assert labels.status == ImportJob.Status.FAILED
    assert labels.result["messages"][0].endswith('there is no eval set "refunds"; import its cases first')
    # Negative control: the same labels job in beta imports.
    again = queue(
        "labels", (DATA / "labels.jsonl").read_bytes(), beta, {"eval_set": "refunds", "rubric": "refund-support@1"}
    )
    import_jobs.run(again.pk)
    again.refresh_from_db()
    assert again.status == ImportJob.Status.DONE, json.dumps(again.result)
