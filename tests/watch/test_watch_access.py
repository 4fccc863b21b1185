"""Who may start, read and stop a watch, on every surface (pages, `manage.py watch`, the API), with negative
controls; another workspace's watch answers exactly as a missing one; bad input is refused in words and starts
nothing."""

from __future__ import annotations

import io
import json

import pytest
from django.core.management import CommandError, call_command

from api.models import TokenScope
from evals.models import Role
from tests.api_helpers import call, create_token
from tests.factories import make_user, make_workspace, set_role
from tests.watch_helpers import watched_set
from tests.workspace_helpers import same_answer
from watch.models import Watch
from watch.starting import start

pytestmark = pytest.mark.django_db
MISSING = 999_999


@pytest.fixture
def world(fake_llm):
    w = watched_set(fake_llm)
    other = watched_set(fake_llm, workspace=make_workspace("other"), slug="-other")
    theirs = start(
        eval_set=other.production, criterion=other.criterion, judge_config=other.judge, by=other.lead, audit_share=0.1
    )
    people = {role: make_user(f"w-{role}", role, workspace=w.workspace) for role in (Role.ANNOTATOR, Role.REVIEWER)}
    return w, theirs, people


def _form(w, **changes) -> dict:
    data = {"eval_set": w.production.pk, "criterion": w.criterion.pk, "judge_config": w.judge.pk, "audit_share": "0.01"}
    data.update(changes)
    return data


# -- pages ----------------------------------------------------------------------------------------------------


def test_a_lead_starts_reads_and_stops_a_watch_on_the_pages(client, world):
    w, _, _ = world
    client.force_login(w.lead)
    response = client.post("/watches/start", _form(w))
    watch = Watch.objects.get(eval_set=w.production)
    assert response.status_code == 302 and response["Location"] == f"/watches/{watch.pk}/"
    page = client.get(f"/watches/{watch.pk}/").content.decode()
    assert "watching" in page and "as of 0 audit labels" in page and "0.820" in page  # TPR bound from the mark
    assert "the gating mark&#x27;s minimum" in page
    assert client.get("/watches/").status_code == 200
    assert client.post(f"/watches/{watch.pk}/stop").status_code == 302
    watch.refresh_from_db()
    assert watch.stopped_at is not None and watch.stopped_by == w.lead


def test_reviewers_read_but_may_not_start_or_stop_and_annotators_see_nothing(client, world):
    w, _, people = world
    watch = start(eval_set=w.production, criterion=w.criterion, judge_config=w.judge, by=w.lead, audit_share=0.1)
    client.force_login(people[Role.REVIEWER])
    assert client.get("/watches/").status_code == 200
    assert client.get(f"/watches/{watch.pk}/").status_code == 200
    assert client.get("/watches/start").status_code == 403
    assert client.post("/watches/start", _form(w, audit_share="0.2")).status_code == 403
    assert client.post(f"/watches/{watch.pk}/stop").status_code == 403
    assert 'href="/watches/">Watches<' in client.get("/").content.decode()
    client.force_login(people[Role.ANNOTATOR])
    assert 'href="/watches/"' not in client.get("/").content.decode()  # no menu entry for annotators
    for url in ("/watches/", f"/watches/{watch.pk}/", "/watches/start"):
        assert client.get(url).status_code == 403, url
    assert client.post(f"/watches/{watch.pk}/stop").status_code == 403
    watch.refresh_from_db()
    assert watch.stopped_at is None and Watch.objects.filter(eval_set=w.production).count() == 1


def test_another_workspaces_watch_answers_as_a_missing_one_on_the_pages(client, world):
    w, theirs, _ = world
    client.force_login(w.lead)
    assert same_answer(client.get(f"/watches/{theirs.pk}/"), client.get(f"/watches/{MISSING}/"))
    assert client.get(f"/watches/{theirs.pk}/").status_code == 404
    assert same_answer(client.post(f"/watches/{theirs.pk}/stop"), client.post(f"/watches/{MISSING}/stop"))
    theirs.refresh_from_db()
    assert theirs.stopped_at is None
    assert f"watch {theirs.pk}<" not in client.get("/watches/").content.decode()
    # The form lists only this workspace's eval sets: another's id is refused as an unknown one.
    response = client.post("/watches/start", _form(w, eval_set=theirs.eval_set_id))
    assert response.status_code == 422 and "Choose an eval set that exists." in response.content.decode()


@pytest.mark.parametrize(
    ("changes", "words"),
    [
        ({"audit_share": "abc"}, "Enter a number."),
        ({"audit_share": ""}, "Give the audit share"),
        ({"audit_share": "0"}, "The audit share must be above 0 and at most 1, got 0."),
        ({"audit_share": "nan"}, "Enter a finite number."),
        ({"alpha": "1"}, "The alpha must be above 0 and below 1, got 1."),
        ({"minimum": "1.5"}, "The minimum pass rate must be at least 0 and at most 1, got 1.5."),
        ({"criterion": ""}, "Choose the criterion."),
    ],
)
def test_bad_input_on_the_start_form_is_refused_in_words_and_starts_nothing(client, world, changes, words):
    w, _, _ = world
    client.force_login(w.lead)
    response = client.post("/watches/start", _form(w, **changes))
    assert response.status_code == 422
    assert words in response.content.decode()
    assert not Watch.objects.filter(eval_set=w.production).exists()


def test_without_a_gating_mark_the_lead_gives_the_minimum_and_bounds(client, world):
    w, _, _ = world
    other = w.rubric_version.criteria.get(key="next_step")  # does not gate
    client.force_login(w.lead)
    response = client.post("/watches/start", _form(w, criterion=other.pk))
    assert response.status_code == 422 and "give the minimum pass rate" in response.content.decode()
    response = client.post("/watches/start", _form(w, criterion=other.pk, minimum="0.7"))
    assert "give the TPR and TNR bound" in response.content.decode()
    response = client.post(
        "/watches/start", _form(w, criterion=other.pk, minimum="0.7", tpr_lower="0.8", tnr_lower="0.6")
    )
    assert response.status_code == 302
    watch = Watch.objects.get(criterion=other)
    assert (watch.minimum, watch.tpr_lower, watch.tnr_lower) == (0.7, 0.8, 0.6)
    assert watch.bounds_source == "set by the lead at the start"


def test_a_second_watch_of_the_same_instrument_is_refused_until_the_first_stops(client, world):
    w, _, _ = world
    client.force_login(w.lead)
    assert client.post("/watches/start", _form(w)).status_code == 302
    response = client.post("/watches/start", _form(w, audit_share="0.5"))
    assert response.status_code == 422 and "is already watched" in response.content.decode()
    assert Watch.objects.filter(eval_set=w.production).count() == 1


# -- the command ----------------------------------------------------------------------------------------------


def _cmd(*args) -> str:
    out = io.StringIO()
    call_command("watch", *args, stdout=out)
    return out.getvalue()


def _start_args(w, *more, share: str = "0.05") -> list[str]:
    return [
        "start",
        "--workspace", w.workspace.slug,
        "--eval-set", w.production.name,
        "--rubric", w.rubric_version.ref,
        "--criterion", "correct_amount",
        "--judge", w.judge.name,
        "--audit-share", share,
        *more,
    ]  # fmt: skip


def test_the_command_starts_lists_shows_and_stops_a_watch(world):
    w, _, _ = world
    watch_id = int(_cmd(*_start_args(w, "--by", w.lead.username)))
    listed = _cmd("list", "--workspace", w.workspace.slug)
    assert listed.startswith(f"{watch_id}\twatching\tcorrect_amount of {w.rubric_version.ref}")
    shown = json.loads(_cmd("show", str(watch_id), "--workspace", w.workspace.slug, "--format", "json"))
    assert shown["id"] == watch_id and shown["audit_share"] == 0.05 and shown["tpr_lower"] == 0.82
    assert set(shown["bands"]) == {"pass rate", "TPR", "TNR"} and shown["alarms"] == []
    assert "as of 0 audit labels" in _cmd("show", str(watch_id), "--workspace", w.workspace.slug)
    assert _cmd("stop", str(watch_id), "--workspace", w.workspace.slug, "--by", w.lead.username).strip() == (
        f"watch {watch_id} stopped"
    )


def test_the_command_refuses_a_non_lead_bad_input_and_another_workspaces_watch(world):
    w, theirs, people = world
    with pytest.raises(CommandError, match="Only a lead of the eval set's workspace may start or stop a watch"):
        _cmd(*_start_args(w, "--by", people[Role.REVIEWER].username))
    with pytest.raises(CommandError, match="The audit share must be above 0 and at most 1, got 2"):
        _cmd(*_start_args(w, "--by", w.lead.username, share="2"))
    with pytest.raises(CommandError, match="unknown criterion 'nope'"):
        _cmd(*[a if a != "correct_amount" else "nope" for a in _start_args(w, "--by", w.lead.username)])
    assert not Watch.objects.filter(eval_set=w.production).exists()
    for action in (["show", str(theirs.pk)], ["stop", str(theirs.pk), "--by", w.lead.username]):
        with pytest.raises(CommandError) as theirs_error:
            _cmd(*action, "--workspace", w.workspace.slug)
        with pytest.raises(CommandError) as missing_error:
            _cmd(*[str(MISSING) if a == str(theirs.pk) else a for a in action], "--workspace", w.workspace.slug)
        assert str(theirs_error.value) == f"no watch {theirs.pk}" and str(missing_error.value) == f"no watch {MISSING}"
    theirs.refresh_from_db()
    assert theirs.stopped_at is None


# -- the API ----------------------------------------------------------------------------------------------------


def _body(w, **changes) -> dict:
    body = {
        "eval_set": w.production.name,
        "rubric": w.rubric_version.ref,
        "judge": w.judge.name,
        "criterion": "correct_amount",
        "audit_share": 0.02,
    }
    body.update(changes)
    return body


def test_the_api_starts_lists_shows_and_stops_a_watch_for_the_tokens_lead(client, world):
    w, _, _ = world
    token = create_token(client, w.lead, [TokenScope.AUDIT], w.rubric_version)
    response = call(client, "POST", "/api/watches", token, _body(w))
    assert response.status_code == 201, response.content
    watch_id = response.json()["id"]
    assert response.json()["minimum"] == 0.8 and response.json()["status"] == "watching"
    assert [r["id"] for r in call(client, "GET", "/api/watches", token).json()["watches"]] == [watch_id]
    assert call(client, "GET", f"/api/watches/{watch_id}", token).json()["freshness"].startswith("as of 0 audit")
    stopped = call(client, "POST", f"/api/watches/{watch_id}/stop", token)
    assert stopped.status_code == 200 and stopped.json()["status"] == "stopped"
    assert call(client, "POST", f"/api/watches/{watch_id}/stop", token).status_code == 409


def test_the_api_answers_another_workspaces_watch_as_a_missing_one(client, world):
    w, theirs, _ = world
    token = create_token(client, w.lead, [TokenScope.AUDIT], w.rubric_version)
    for method, suffix in (("GET", ""), ("POST", "/stop")):
        a = call(client, method, f"/api/watches/{theirs.pk}{suffix}", token)
        b = call(client, method, f"/api/watches/{MISSING}{suffix}", token)
        assert a.status_code == 404 and a.json() == b.json()
    theirs.refresh_from_db()
    assert theirs.stopped_at is None


@pytest.mark.parametrize(
    "changes",
    [{"audit_share": "0.1"}, {"audit_share": 0}, {"audit_share": 1.5}, {"alpha": 1.0}, {"extra": 1}, {"rubric": "x"}],
)
def test_a_bad_api_body_is_refused_and_starts_nothing(client, world, changes):
    w, _, _ = world
    token = create_token(client, w.lead, [TokenScope.AUDIT], w.rubric_version)
    response = call(client, "POST", "/api/watches", token, _body(w, **changes))
    assert response.status_code in (400, 422) and "error" in response.json()
    assert not Watch.objects.exists() or not Watch.objects.filter(eval_set=w.production).exists()


def test_a_token_whose_maker_is_no_longer_a_lead_may_not_start_and_an_annotator_maker_may_not_read(client, world):
    w, _, _ = world
    token = create_token(client, w.lead, [TokenScope.AUDIT], w.rubric_version)
    watch = start(eval_set=w.production, criterion=w.criterion, judge_config=w.judge, by=w.lead, audit_share=0.1)
    set_role(w.lead, Role.REVIEWER, w.workspace)
    assert call(client, "GET", f"/api/watches/{watch.pk}", token).status_code == 200  # a reviewer reads
    assert call(client, "POST", f"/api/watches/{watch.pk}/stop", token).status_code == 403
    set_role(w.lead, Role.ANNOTATOR, w.workspace)
    response = call(client, "GET", f"/api/watches/{watch.pk}", token)
    assert response.status_code == 403
    said = f"this token was made by {w.lead.username}, who is annotator there now"
    assert response.json()["error"] == f"{said}; only a reviewer or lead may read watches"
    assert call(client, "GET", "/api/watches", token).status_code == 403
    watch.refresh_from_db()
    assert watch.stopped_at is None


def test_the_list_page_costs_the_same_queries_for_one_watch_as_for_five(client, world):
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    w, _, _ = world
    client.force_login(w.lead)
    criteria = [w.criterion, w.rubric_version.criteria.get(key="next_step")]
    start(eval_set=w.production, criterion=criteria[0], judge_config=w.judge, by=w.lead, audit_share=0.1)

    def queries() -> int:
        with CaptureQueriesContext(connection) as seen:
            assert client.get("/watches/").status_code == 200
        seen_last[:] = [q["sql"][:150] for q in seen.captured_queries]
        return len(seen)

    seen_last: list[str] = []

    queries()  # the first request of a session reads more (its workspace, its roles): not this page's cost
    one = queries()
    for share in (0.2, 0.3, 0.4, 0.5):  # stopped ones of the second criterion, and one still watching
        watch = start(
            eval_set=w.production,
            criterion=criteria[1],
            judge_config=w.judge,
            by=w.lead,
            audit_share=share,
            minimum=0.7,
            tpr_lower=0.8,
            tnr_lower=0.7,
        )
        if share < 0.5:
            Watch.objects.filter(pk=watch.pk).update(stopped_at=watch.started_at)
    assert Watch.objects.filter(eval_set=w.production).count() == 5
    assert queries() == one, seen_last
