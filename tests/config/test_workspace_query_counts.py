"""Query counts do not depend on the number of workspaces (issue 36, item 6).

Every page of one workspace's lead, reviewer and annotator is viewed once in a database with that workspace
alone, its SQL statements counted; then two more workspaces with the same things under the same names are
added, and each page must run exactly as many statements again (assertNumQueries). bench/workspaces.py times
the same pages with 20 workspaces.
"""

from __future__ import annotations

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.urls import reverse

from evals.models import Role
from tests.workspace_helpers import KEY, World, build

pytestmark = [pytest.mark.django_db, pytest.mark.slow]


def pages(world: World) -> dict[str, list[str]]:
    ids = world.ids
    report = reverse("calibration:report", args=[ids["eval_set"], ids["rubric_version"], ids["judge"]])
    lead = [
        "/",
        reverse("calibration:index"),
        report,
        report + f"{KEY}/false-pass/",
        reverse("calibration:gates"),
        reverse("calibration:audit_plans"),
        reverse("calibration:audit_plan", args=[ids["plan"]]),
        reverse("overview:progress"),
        reverse("overview:eval_set", args=[ids["eval_set"]]),
        reverse("overview:output", args=[ids["output"]]),
        reverse("judging:index"),
        reverse("judging:run", args=[ids["run"]]),
        reverse("judging:run_verdicts", args=[ids["run"]]),
        reverse("judging:verdict", args=[ids["verdict"]]),
        reverse("judging:config", args=[ids["judge"]]),
        reverse("judging:probes"),
        reverse("formats:upload"),
        reverse("labeling:rubric_version", args=[ids["rubric_version"]]),
        reverse("labeling:queues"),
        reverse("labeling:adjudication_queue"),
    ]
    return {
        Role.LEAD: lead,
        Role.REVIEWER: ["/", reverse("labeling:adjudication_queue"), reverse("overview:progress")],
        Role.ANNOTATOR: ["/", reverse("labeling:my_work")],
    }


def counts(client, world: World) -> dict[tuple[str, str], int]:
    found = {}
    for role, paths in pages(world).items():
        client.force_login(world.people[role])
        for path in paths:
            client.get(path)  # a first view computes and caches figures: the count is of a view after it
            with CaptureQueriesContext(connection) as queries:
                assert client.get(path).status_code == 200, (role, path)
            found[(role, path)] = len(queries)
    return found


def test_every_page_runs_as_many_queries_with_three_workspaces_as_with_one(client, django_assert_num_queries):
    alpha = build("alpha")
    alone = counts(client, alpha)
    assert len(alone) == sum(len(p) for p in pages(alpha).values())
    build("beta"), build("gamma")  # the same things under the same names, in two more workspaces
    for (role, path), expected in alone.items():
        client.force_login(alpha.people[role])
        client.get(path)
        with django_assert_num_queries(expected):
            client.get(path)
