"""Every path that returns a judge version's held-out figures counts exactly one look, or shows none (issue 41,
item 3).

The world (tests/guidance_helpers.held_out_world): 12 outputs with gold on next_step, a split fixed with seed 3
(3 gold PASS and 3 gold FAIL in each part), and `support-judge-v2`, whose one example came from the development
split, so its figures on this eval set are held-out ones. It is right on every development item and says PASS on
every held-out one. By hand, on the 6 held-out items: 3 true passes, 3 false passes, no true or false fail, so
n = 6, TPR = 3/3 and TNR = 0/3. `plain` has the very same verdicts and no examples: measured on all 12 items
(n = 12), no held-out figures, so no path may count a look for it (the negative control of every path).

Before this change the exports (CSV, JSON, JSON with agent_version), Compare (page and htmx), the report page
shown again after a refused decision and the drilldown returned the held-out figures and the counter stayed at
0: `assert look_count(split) == before + 1` failed for each of them (0 == 1); the overview grid showed v2's
held-out n and tier on every visit (`assert "held-out split" in v2_cell and "n 6" not in v2_cell` failed); and
the text report did not say its figures were held-out ones.
"""

from __future__ import annotations

import csv
import io
import json
import re
from collections.abc import Callable
from dataclasses import dataclass

import pytest
from django.core.management import CommandError, call_command
from django.test import Client
from django.urls import reverse

from judging.gold_splits import look_count
from judging.models import JudgeConfig
from tests.api_helpers import call, create_token
from tests.factories import add_verdict, default_workspace, make_llm_judge, make_run
from tests.guidance_helpers import HeldOutWorld, held_out_world

pytestmark = pytest.mark.django_db

AGENT_VERSION = "default"  # make_output's agent version: every output of the world


@dataclass
class Visit:
    """What a path needs: a logged-in lead's client, a report token, the world."""

    client: Client
    token: str
    world: HeldOutWorld


def _report_url(v: Visit, judge: JudgeConfig, suffix: str = "") -> str:
    w = v.world
    return reverse("calibration:report", args=[w.eval_set.pk, w.rubric.pk, judge.pk]) + suffix


def _page(v: Visit, judge: JudgeConfig, suffix: str = "", **extra) -> str:
    response = v.client.get(_report_url(v, judge, suffix), **extra)
    assert response.status_code == 200
    return response.content.decode()


def _api(v: Visit, judge: JudgeConfig, **query) -> dict:
    w = v.world
    answer = call(
        v.client, "GET", "/api/calibration-report", v.token, eval_set=w.eval_set.name, rubric=w.rubric.ref,
        judge=judge.name, **query,
    )  # fmt: skip
    assert answer.status_code == 200
    return answer.json()


def _command(v: Visit, judge: JudgeConfig, *args: str) -> str:
    out = io.StringIO()
    w = v.world
    names = ["--eval-set", w.eval_set.name, "--rubric", w.rubric.ref, "--judge", judge.name]
    call_command("calibration_report", *names, *args, stdout=out)
    return out.getvalue()


def _compare(v: Visit, judge: JudgeConfig, **extra) -> str:
    w = v.world
    other = JudgeConfig.objects.get(name="other")
    query = {
        "eval_set": w.eval_set.pk,
        "left_rubric": w.rubric.pk,
        "left_judge": judge.pk,
        "right_rubric": w.rubric.pk,
        "right_judge": other.pk,
    }
    response = v.client.get(reverse("calibration:compare"), query, **extra)
    assert response.status_code == 200
    return response.content.decode()


def _refused_review(v: Visit, judge: JudgeConfig) -> str:
    # A "gating stays as it is" without a reason is refused: the whole report page again, with its figures.
    w = v.world
    url = reverse("calibration:review_gating", args=[w.eval_set.pk, w.rubric.pk, judge.pk])
    response = v.client.post(url, {"review-reason": ""})
    assert response.status_code == 422
    return response.content.decode()


def _drilldown(v: Visit, judge: JudgeConfig) -> str:
    w = v.world
    url = reverse("calibration:drilldown", args=[w.eval_set.pk, w.rubric.pk, judge.pk, "next_step", "false-pass"])
    response = v.client.get(url)
    assert response.status_code == 200
    return response.content.decode()


def _csv_n(body: str) -> int:
    return int(next(r for r in csv.DictReader(io.StringIO(body)) if r["criterion"] == "next_step")["n"])


def _json_n(report: dict) -> int:
    criteria = report["segments"][0]["criteria"] if "segments" in report else report["criteria"]
    return next(c["n"] for c in criteria if c["criterion"] == "next_step")


def _text_n(body: str) -> int:
    return int(next(line for line in body.splitlines() if line.startswith("next_step "))[len("next_step") :].split()[0])


def _report_n(page: str) -> int:
    return int(re.findall(r"n = (\d+)", page[page.index('id="criterion-next_step"') :])[0])


def _compare_n(page: str) -> int:
    return int(re.findall(r"· n (\d+)", page[page.index("<td><code>next_step</code></td>") :])[0])  # side A


# name -> the path, returning the n on next_step it showed: v2's is the held-out 6, plain's the whole 12.
PATHS: dict[str, Callable[[Visit, JudgeConfig], int]] = {
    "report page": lambda v, j: _report_n(_page(v, j)),
    "report page, one agent version": lambda v, j: _report_n(_page(v, j, f"?agent_version={AGENT_VERSION}")),
    "report page after a refused decision": lambda v, j: _report_n(_refused_review(v, j)),
    "export.csv": lambda v, j: _csv_n(_page(v, j, "export.csv")),
    "export.json": lambda v, j: _json_n(json.loads(_page(v, j, "export.json"))),
    "export.json?agent_version": lambda v, j: _json_n(
        json.loads(_page(v, j, f"export.json?agent_version={AGENT_VERSION}"))
    ),
    "API": lambda v, j: _json_n(_api(v, j)),
    "API, one agent version": lambda v, j: _json_n(_api(v, j, agent_version=AGENT_VERSION)),
    "API, by agent version": lambda v, j: _json_n(_api(v, j, by="agent_version")),
    "command, text": lambda v, j: _text_n(_command(v, j)),
    "command, json": lambda v, j: _json_n(json.loads(_command(v, j, "--format", "json"))),
    "command, csv": lambda v, j: _csv_n(_command(v, j, "--format", "csv")),
    "command, by agent version": lambda v, j: _json_n(
        json.loads(_command(v, j, "--by", "agent_version", "--format", "json"))
    ),
    "Compare": lambda v, j: _compare_n(_compare(v, j)),
    "Compare over htmx": lambda v, j: _compare_n(_compare(v, j, HTTP_HX_REQUEST="true")),
}


@pytest.fixture
def visit(client, lead) -> Visit:
    world = held_out_world(lead)
    plain, other = make_llm_judge(name="plain"), make_llm_judge(name="other")
    for judge in (plain, other):
        run = make_run(world.eval_set, world.rubric, judge)
        for o in world.outputs:
            add_verdict(run, o, "next_step", world.gold[o.pk] if o.pk in world.split.development else "PASS")
    token = create_token(client, lead, ["report"], world.rubric)
    client.force_login(lead)
    return Visit(client, token, world)


@pytest.mark.parametrize("path", list(PATHS))
def test_each_path_that_returns_held_out_figures_counts_exactly_one_look(visit, path):
    split, v2 = visit.world.split, visit.world.v2
    before = look_count(split)
    assert PATHS[path](visit, v2) == 6  # the held-out figures were returned ...
    assert look_count(split) == before + 1  # ... and counted once
    assert PATHS[path](visit, v2) == 6
    assert look_count(split) == before + 2  # every request is a look of its own


@pytest.mark.parametrize("path", list(PATHS))
def test_the_same_path_for_a_judge_without_examples_counts_nothing(visit, path):
    # Negative control: the same verdicts under a judge without examples are measured on all 12 items.
    split = visit.world.split
    assert PATHS[path](visit, JudgeConfig.objects.get(name="plain")) == 12
    assert look_count(split) == 0


def test_the_text_report_says_its_figures_are_held_out_ones(visit):
    text = _command(visit, visit.world.v2)
    assert "measured on the held-out split only (6 outputs)" in text.splitlines()[1]
    assert "held-out" not in _command(visit, JudgeConfig.objects.get(name="plain"))  # negative control


def test_each_look_says_where_it_came_from_and_who_looked(visit, lead):
    v2 = visit.world.v2
    _page(visit, v2, "export.csv")
    _compare(visit, v2)
    looks = visit.world.split.looks.order_by("pk")
    assert [(x.via, x.looked_by) for x in looks] == [("export csv", lead), ("compare", lead)]
    assert [[c["name"] for c in x.configs] for x in looks] == [[v2.name], [v2.name]]


def test_both_sides_of_a_compare_on_one_split_are_one_look_with_both_versions(visit):
    w = visit.world
    v3 = JudgeConfig.objects.create(
        workspace=default_workspace(),
        name="support-judge-v3", backend=w.v2.backend, model_id=w.v2.model_id, guidance=w.v2.guidance,
        guidance_rubric_version=w.rubric,
    )  # fmt: skip
    query = {"eval_set": w.eval_set.pk, "left_rubric": w.rubric.pk, "left_judge": w.v2.pk}
    query |= {"right_rubric": w.rubric.pk, "right_judge": v3.pk}
    assert visit.client.get(reverse("calibration:compare"), query).status_code == 200
    look = w.split.looks.get()
    assert sorted(c["name"] for c in look.configs) == ["support-judge-v2", "support-judge-v3"]


def test_the_drilldown_behind_a_held_out_cell_counts_one_look_per_page(visit):
    w = visit.world
    held_fails = [o for o in w.outputs if o.pk in w.split.held_out and w.gold[o.pk] == "FAIL"]
    page = _drilldown(visit, w.v2)
    # By hand: v2's false passes on the held-out split are its 3 held-out FAIL golds.
    assert "<strong>3</strong> items" in page and all(o.case.case_id in page for o in held_fails)
    assert look_count(w.split) == 1
    _drilldown(visit, JudgeConfig.objects.get(name="plain"))
    assert look_count(w.split) == 1  # negative control: plain's cell is no held-out figure


def test_the_workbench_counts_its_held_out_comparison_and_not_its_development_one(visit):
    w = visit.world
    data = {"eval_set": w.eval_set.pk, "rubric_version": w.rubric.pk, "a": w.v2.derived_from.pk, "b": w.v2.pk}
    development = visit.client.get(reverse("calibration:version_compare"), data)
    assert development.status_code == 200 and b"development split" in development.content
    assert look_count(w.split) == 0  # the negative control: the development split is there to be looked at
    held_out = visit.client.post(reverse("calibration:version_compare_held_out"), data)
    assert held_out.status_code == 200 and b"held out: looked at 1 time" in held_out.content
    assert look_count(w.split) == 1


def test_the_overview_shows_no_held_out_figures_and_counts_no_look(visit):
    w = visit.world
    page = _page_of(visit, reverse("calibration:index"))
    grid = page[page.index(f'id="grid-{w.eval_set.pk}"') :]
    columns = grid[: grid.index("</thead>")]
    cells = grid[grid.index("<td><code>next_step</code></td>") :].split("</tr>", 1)[0]
    assert columns.index("support-judge-v2") < columns.index(">plain<")  # v2 ran first: the leftmost column
    v2_cell, plain_cell = cells.split("<td")[2:4]
    assert "held-out split" in v2_cell and "n 6" not in v2_cell
    assert "n 12" in plain_cell  # negative control: the column of a judge without examples keeps its figures
    assert look_count(w.split) == 0


def _page_of(v: Visit, url: str) -> str:
    response = v.client.get(url)
    assert response.status_code == 200
    return response.content.decode()


def test_marking_gating_on_held_out_figures_from_the_command_counts_a_look(visit):
    # `approve --gating` prints the mark's kappa and n, and a refusal quotes them: on v2 they are held-out figures.
    w = visit.world
    plain = JudgeConfig.objects.get(name="plain")
    for judge, counted in ((plain, 0), (w.v2, 1)):  # plain first: the negative control counts nothing
        before = look_count(w.split)
        args = ["--rubric", w.rubric.ref, "--judge", judge.name, "--eval-set", w.eval_set.name, "--gating", "next_step"]
        with pytest.raises(CommandError, match="n 6|n 12|tier"):
            call_command("approve", *args, "--by", "lead", "--reason", "held-out look", stdout=io.StringIO())
        assert look_count(w.split) == before + counted, judge.name


def test_home_reads_no_held_out_tier_for_a_tier_change(visit, lead):
    # Home's "tier changed" computed the held-out tier of a mark on every load: it now leaves held-out splits out.
    from tests.factories import mark_as_gating

    w = visit.world
    plain = JudgeConfig.objects.get(name="plain")
    mark_as_gating(w.rubric, w.v2, ["next_step"], w.eval_set, by=lead)
    mark_as_gating(w.rubric, plain, ["next_step"], w.eval_set, by=lead)
    home = visit.client.get(reverse("home")).content.decode()
    assert look_count(w.split) == 0
    # The negative control: plain's mark (whole eval set, 12 items: insufficient) is still checked and listed.
    assert f"next_step gates with plain on {w.rubric.ref}: marked in the gate tier, now insufficient" in home
    assert f"next_step gates with {w.v2.name}" not in home
