"""A probe run on a real Celery worker over Redis against the fake server: every arm's lanes fan out, the
judge config's bound holds across all of them, the page follows it to its results, and `probe_judge --wait`
follows the next one."""

from __future__ import annotations

import io
import time

import pytest
from django.core.management import call_command
from django.urls import reverse

from judging.models import ProbeRun
from judging.probes import runs as probe_runs
from judging.probes.results import results_of
from judging.probes.transforms import INJECTION_LINE
from tests.factories import RESPONSE, make_llm_judge, make_rubric_version, make_scope
from tests.judging.test_judging_celery import RUN_TIMEOUT_S

pytestmark = [pytest.mark.celery, pytest.mark.django_db(transaction=True)]


def wait_until_finished(probe_run, timeout: float = RUN_TIMEOUT_S) -> str:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        status = probe_runs.status_of(probe_run)
        if status not in ("queued", "running"):
            return status
        time.sleep(0.2)
    raise AssertionError(f"probe run {probe_run.pk} still {probe_runs.status_of(probe_run)} after {timeout} s")


def test_a_probe_run_started_on_the_page_runs_on_workers_within_the_bound_and_catches_a_gullible_judge(
    client,
    lead,
    fake_llm,
    judge_key,
    workers,
):
    fake_llm.latency_s = 0.1
    fake_llm.gullible = INJECTION_LINE
    judge = make_llm_judge(fake_llm, max_concurrency=3)
    rubric = make_rubric_version(name="refund", version="1")
    scope = make_scope(judge, responses=[RESPONSE] * 4 + [f"{RESPONSE} [[fake:all=FAIL]]"] * 4, rubric=rubric)
    workers(concurrency=2)
    client.force_login(lead)
    form = {
        "eval_set": scope.eval_set.name,
        "rubric_version": rubric.pk,
        "judge_config": judge.pk,
        "probes": ["injection", "sycophancy"],
    }
    assert client.post(reverse("judging:start_probe_run"), form).status_code == 302
    probe_run = ProbeRun.objects.get()
    assert wait_until_finished(probe_run) == "done"
    panel = client.get(reverse("judging:probe_status", args=[probe_run.pk]), HTTP_HX_REQUEST="true")
    assert panel.status_code == 286 and "fooled_by_injection" in panel.content.decode()
    assert fake_llm.calls == 24  # 8 outputs x 3 arms, one call each (per-output mode)
    assert fake_llm.max_in_flight <= 3  # six lanes in two worker processes, one bound across all of them
    results = results_of(probe_run)
    assert results.criterion("correct_amount").warning_codes == ["fooled_by_injection"]
    assert results.criterion("next_step").cell("sycophancy").warnings == ()
    # The same probes again, followed by the command: every answer from the cache.
    fake_llm.reset()
    out = io.StringIO()
    call_command(
        "probe_judge",
        "--eval-set",
        scope.eval_set.name,
        "--rubric",
        "refund@1",
        "--judge",
        judge.name,
        "--probes",
        "injection,sycophancy",
        "--wait",
        "--poll",
        "0.2",
        "--timeout",
        str(RUN_TIMEOUT_S),
        stdout=out,
    )
    assert "done: 24/24 items in 3 arms (model calls 0, cache hits 24)" in out.getvalue()
    assert "! fooled_by_injection:" in out.getvalue() and fake_llm.calls == 0
