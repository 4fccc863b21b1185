"""Judge pages: roles enforced on the server (annotators are blind to the judge), live progress that stops
polling when the run ends, verdicts with their raw output, untrusted text escaped, no key ever shown."""

from __future__ import annotations

import pytest
from django.test import Client
from django.urls import URLPattern, reverse

from judging import urls as judging_urls
from judging.models import JudgeConfig, JudgeRun, ProbeRun, RunItem, Verdict
from judging.nav import nav_items
from tests.factories import (
    RESPONSE,
    default_workspace,
    make_eval_set,
    make_llm_judge,
    make_output,
    make_rubric_version,
    make_scope,
)
from tests.judging_helpers import CONFIG_FORM, KEY_ENV, KEY_VALUE, Sleeps, judge_in_process

pytestmark = pytest.mark.django_db
XSS = "<script>alert('x')</script>"


@pytest.fixture
def judged(db):
    """A finished run with one verdict per outcome kind, built directly (no model needed for pages)."""
    eval_set = make_eval_set("support")
    rv = make_rubric_version(name="refund", version="1")
    judge = make_llm_judge(name="gpt-judge", base_url="http://127.0.0.1:9/v1")
    output = make_output(eval_set, case_id="c1", response=f"Refund of $40.00 issued. {XSS}")
    run = JudgeRun.objects.create(
        eval_set=eval_set, rubric_version=rv, judge_config=judge, status="done", total_items=1, expected_verdicts=2
    )
    RunItem.objects.create(run=run, output=output, state="done", model_calls=1, tokens_in=120, tokens_out=30)
    amount, step = rv.criteria.order_by("order")
    common = {
        "run": run,
        "output": output,
        "rubric_version": rv,
        "judge_config": judge,
        "judge_config_hash": judge.content_hash,
        "model_id": judge.model_id,
    }
    Verdict.objects.create(
        criterion=amount,
        outcome="PASS",
        evidence="Refund of $40.00",
        evidence_found=True,
        raw_output='{"criteria": [{"criterion": "correct_amount", "verdict": "PASS"}]}',
        latency_ms=812,
        tokens_in=120,
        tokens_out=30,
        attempts=1,
        **common,
    )
    Verdict.objects.create(
        criterion=step,
        outcome="ERROR",
        error_kind="parse",
        error_reason="the judge skipped this criterion",
        raw_output=f"{XSS} not json",
        **common,
    )
    return run


def urls_of(run: JudgeRun) -> list[tuple[str, str]]:
    """Every judging URL with the method it serves, from the URLconf itself (a new view cannot be forgotten)."""
    verdict = run.verdicts.first()
    probe_run = ProbeRun.objects.create(
        eval_set=run.eval_set,
        rubric_version=run.rubric_version,
        judge_config=run.judge_config,
        plan=[{"name": "padding", "version": 1, "summary": "filler", "neutral": ["correct_amount"], "meaningful": []}],
    )
    args = {
        "run_id": run.pk,
        "verdict_id": verdict.pk,
        "config_id": run.judge_config_id,
        "probe_run_id": probe_run.pk,
        "probe": "padding",
        "key": "correct_amount",
    }
    posts = {"start_run", "run_cancel", "start_probe_run", "probe_cancel"}
    out = []
    for pattern in judging_urls.urlpatterns:
        assert isinstance(pattern, URLPattern)
        route = str(pattern.pattern)
        kwargs = {k: v for k, v in args.items() if f"<int:{k}>" in route or f"<slug:{k}>" in route}
        url = reverse(f"judging:{pattern.name}", kwargs=kwargs)
        out.append(("post" if pattern.name in posts else "get", url))
        if pattern.name == "config_new":
            out.append(("post", url))
    return out


def test_annotators_get_403_on_every_judge_page(client, annotator, judged):
    client.force_login(annotator)
    for method, url in urls_of(judged):
        response = getattr(client, method)(url)
        assert response.status_code == 403, url
        assert b"gpt-judge" not in response.content and b"PASS" not in response.content
    assert nav_items(annotator, default_workspace()) == []


def test_anonymous_visitors_are_sent_to_log_in(client, judged):
    for method, url in urls_of(judged):
        response = getattr(client, method)(url)
        assert response.status_code == 302 and response["Location"].startswith(reverse("login")), url


def test_reviewers_may_look_but_not_start_cancel_or_create(client, reviewer, judged):
    client.force_login(reviewer)
    for method, url in urls_of(judged):
        response = getattr(client, method)(url)
        allowed = 286 if url.endswith(("/progress", "/status")) else 200  # the run is done: the poll says stop
        assert response.status_code == (allowed if method == "get" and "/new" not in url else 403), url
    assert nav_items(reviewer, default_workspace()) == [{"label": "Judge", "url": reverse("judging:index")}]
    judged.refresh_from_db()
    assert judged.status == "done"


def test_the_index_lists_runs_and_configs_and_offers_the_start_form_to_leads(client, lead, reviewer, judged):
    client.force_login(lead)
    page = client.get(reverse("judging:index")).content.decode()
    assert "Start a run" in page and "gpt-judge" in page and "1 / 1" in page
    client.force_login(reviewer)
    assert "Start a run" not in client.get(reverse("judging:index")).content.decode()


def test_the_run_page_shows_counts_errors_tokens_and_polls_only_while_active(client, lead, judged):
    client.force_login(lead)
    url = reverse("judging:run", args=[judged.pk])
    page = client.get(url).content.decode()
    assert 'id="run-progress"' in page and "hx-trigger" not in page  # done: nothing to poll
    assert "the judge skipped this criterion" in page and "120" in page and "30" in page
    JudgeRun.objects.filter(pk=judged.pk).update(status="running")
    page = client.get(url).content.decode()
    assert f'hx-get="{reverse("judging:run_progress", args=[judged.pk])}" hx-trigger="every 2s"' in page
    assert "Cancel the run" in page


def test_the_progress_partial_stops_polling_with_286_when_the_run_ends(client, reviewer, judged):
    client.force_login(reviewer)
    url = reverse("judging:run_progress", args=[judged.pk])
    JudgeRun.objects.filter(pk=judged.pk).update(status="running")
    RunItem.objects.filter(run=judged).update(state="claimed")
    running = client.get(url, headers={"HX-Request": "true"})
    assert running.status_code == 200
    body = running.content.decode()
    assert body.lstrip().startswith('<section class="card" id="run-progress"') and "<html" not in body
    assert 'hx-trigger="every 2s"' in body and "<strong>0</strong> of 1 items" in body
    JudgeRun.objects.filter(pk=judged.pk).update(status="done")
    RunItem.objects.filter(run=judged).update(state="done")
    done = client.get(url, headers={"HX-Request": "true"})
    assert done.status_code == 286
    assert "hx-trigger" not in done.content.decode() and "<strong>1</strong> of 1 items" in done.content.decode()


def test_progress_costs_the_same_queries_whatever_the_run_size(client, reviewer, judged, django_assert_max_num_queries):
    client.force_login(reviewer)
    url = reverse("judging:run_progress", args=[judged.pk])
    client.get(url)
    # at most: the session, its user, the run, its refresh, items aggregate, outcome counts, flags, error reasons,
    # and the person's workspace memberships (one query for every signed-in request, #36)
    with django_assert_max_num_queries(9):
        client.get(url)
    output = make_output(judged.eval_set, case_id="c2", response="More.")
    for c in judged.rubric_version.criteria.all():
        Verdict.objects.create(
            run=judged,
            output=output,
            rubric_version=judged.rubric_version,
            criterion=c,
            judge_config=judged.judge_config,
            judge_config_hash="h",
            outcome="FAIL",
        )
    with django_assert_max_num_queries(9):
        client.get(url)


def test_verdicts_are_browsable_with_filters_and_escaped(client, reviewer, judged, django_assert_max_num_queries):
    client.force_login(reviewer)
    url = reverse("judging:run_verdicts", args=[judged.pk])
    page = client.get(url).content.decode()
    assert "2 verdicts." in page and "the judge skipped this criterion" in page
    assert XSS not in page and "&lt;script&gt;" in page
    assert "1 verdict." in client.get(url, {"outcome": "ERROR"}).content.decode()
    assert "1 verdict." in client.get(url, {"criterion": "correct_amount"}).content.decode()
    assert "No verdicts match" in client.get(url, {"flag": "quote_not_found"}).content.decode()
    assert "2 verdicts." in client.get(url, {"outcome": "BOGUS"}).content.decode()  # unknown filter values are ignored
    # session, its user, its workspace memberships (#36), run, criteria, count, page of verdicts (one join)
    with django_assert_max_num_queries(7):
        client.get(url)


def test_a_verdict_page_shows_raw_output_and_highlights_the_quote(client, reviewer, judged):
    client.force_login(reviewer)
    passed, errored = judged.verdicts.order_by("criterion__order")
    page = client.get(reverse("judging:verdict", args=[passed.pk])).content.decode()
    assert '<mark class="hl-judge">Refund of $40.00</mark>' in page
    assert "&quot;criterion&quot;: &quot;correct_amount&quot;" in page  # the raw JSON, indented and escaped
    assert "812 ms" in page and "found in the transcript" in page
    page = client.get(reverse("judging:verdict", args=[errored.pk])).content.decode()
    assert "Unusable answer:" in page and "the judge skipped this criterion" in page
    assert XSS not in page


def test_a_lead_creates_a_judge_config_and_bad_input_is_explained(client, lead):
    client.force_login(lead)
    url = reverse("judging:config_new")
    data = {**CONFIG_FORM, "name": "claude-judge", "backend": "anthropic", "model_id": "claude-x-2026"}
    data["api_key_env"] = "sk-ant-123"
    response = client.post(url, data)
    assert response.status_code == 400
    assert "not the key itself" in response.content.decode() and not JudgeConfig.objects.exists()
    response = client.post(url, {**data, "api_key_env": "ANTHROPIC_API_KEY"})
    config = JudgeConfig.objects.get()
    assert response.status_code == 302 and response["Location"] == reverse("judging:config", args=[config.pk])
    assert config.created_by == lead and config.api_key_env == "ANTHROPIC_API_KEY"
    page = client.get(response["Location"]).content.decode()
    assert "from the environment variable <code>ANTHROPIC_API_KEY</code> (never stored)" in page


def test_a_lead_starts_a_run_and_its_lanes_are_queued_after_commit(client, lead, django_capture_on_commit_callbacks):
    eval_set = make_eval_set("support")
    make_output(eval_set, case_id="c1")
    rv = make_rubric_version(name="refund", version="1")
    judge = make_llm_judge(
        name="inst",
        backend="instrument",
        instruments={
            "correct_amount": {"kind": "max_length", "max_chars": 500},
            "next_step": {"kind": "max_length", "max_words": 100},
        },
    )
    client.force_login(lead)
    with django_capture_on_commit_callbacks(execute=False) as callbacks:
        response = client.post(
            reverse("judging:start_run"),
            {"eval_set": "support", "agent_version": "", "rubric_version": rv.pk, "judge_config": judge.pk},
        )
    run = JudgeRun.objects.get()
    assert response.status_code == 302 and response["Location"] == reverse("judging:run", args=[run.pk])
    assert (run.status, run.mode, run.started_by, run.total_items, run.expected_verdicts) == (
        "queued",
        "celery",
        lead,
        1,
        2,
    )
    # enqueue_lanes, once the run and its items are committed (beside it: the run's save marks a stored calibration
    # report of the instrument behind, calibration/report/report_triggers.py)
    lanes = [c for c in callbacks if c.__qualname__.startswith("start_run.")]
    assert len(lanes) == 1 and len(callbacks) <= 2


def test_starting_a_misconfigured_run_explains_why_and_creates_nothing(client, lead):
    eval_set = make_eval_set("support")
    make_output(eval_set, case_id="c1")
    rv = make_rubric_version(name="refund", version="1")
    partial = make_llm_judge(
        name="partial", backend="instrument", instruments={"next_step": {"kind": "max_length", "max_words": 100}}
    )
    imported = make_llm_judge(name="elsewhere", backend="imported")
    client.force_login(lead)
    data = {"eval_set": "support", "rubric_version": rv.pk, "judge_config": partial.pk}
    response = client.post(reverse("judging:start_run"), data)
    assert response.status_code == 400
    assert "uses instruments only, and has none for correct_amount" in response.content.decode()
    response = client.post(reverse("judging:start_run"), {**data, "judge_config": imported.pk})
    assert response.status_code == 400 and "Select a valid choice" in response.content.decode()
    complete = make_llm_judge(
        name="complete",
        backend="instrument",
        instruments={
            "correct_amount": {"kind": "max_length", "max_chars": 500},
            "next_step": {"kind": "max_length", "max_words": 100},
        },
    )
    response = client.post(reverse("judging:start_run"), {**data, "judge_config": complete.pk, "agent_version": "v9"})
    assert "no outputs of agent version &#x27;v9&#x27; (known: default)" in response.content.decode()
    assert not JudgeRun.objects.exists()


def test_cancel_needs_a_lead_and_a_csrf_token(lead, judged):
    JudgeRun.objects.filter(pk=judged.pk).update(status="running")
    strict = Client(enforce_csrf_checks=True)
    strict.force_login(lead)
    url = reverse("judging:run_cancel", args=[judged.pk])
    assert strict.post(url).status_code == 403
    judged.refresh_from_db()
    assert judged.status == "running"
    page = strict.get(reverse("judging:run", args=[judged.pk]))
    token = page.cookies["csrftoken"].value
    response = strict.post(url, {"csrfmiddlewaretoken": token})
    assert response.status_code == 302
    judged.refresh_from_db()
    assert judged.status == "cancelled"
    follow = strict.post(url, {"csrfmiddlewaretoken": token}, follow=True)
    assert "had already ended" in follow.content.decode()


@pytest.mark.django_db(transaction=True)
def test_no_page_ever_shows_the_api_key(client, judge_key, fake_llm):
    from tests.factories import make_user

    lead = make_user("lead-k", "lead")
    scope = make_scope(make_llm_judge(fake_llm), responses=[RESPONSE, f"{RESPONSE} [[fake:401echo]]"])
    run = judge_in_process(scope, sleep=Sleeps())
    client.force_login(lead)
    pages = [
        reverse("judging:index"),
        reverse("judging:run", args=[run.pk]),
        reverse("judging:run_progress", args=[run.pk]),
        reverse("judging:run_verdicts", args=[run.pk]),
        reverse("judging:config", args=[run.judge_config_id]),
    ]
    pages += [reverse("judging:verdict", args=[v.pk]) for v in run.verdicts.all()]
    for url in pages:
        response = client.get(url)
        assert response.status_code in (200, 286) and KEY_VALUE.encode() not in response.content, url
    assert KEY_ENV in client.get(reverse("judging:config", args=[run.judge_config_id])).content.decode()
