"""The authorization matrix of workspaces (issue 36, "Done when").

Two workspaces, `alpha` and `beta`, hold the same things under the same names (a rubric `refund`, judge
`gpt-judge`, eval sets `cal` and `rc-1`, a queue, labels, an audit plan, a gate result, a token, a probe run,
an import job) and each has one thing only it holds, named `only-in-<slug>`. Then:

- every URL of the site with an object id in it, GET and POST, asked by alpha's annotator, reviewer and lead
  (and a staff lead in the admin) with the ids of beta's objects, must answer exactly as with ids that exist
  nowhere (status, content type and body, the CSRF token aside): one id of beta among alpha's own, and all;
- every page without an id, asked by each of alpha's roles, never shows beta's only-name;
- every API operation with an id in its path, asked with alpha's token of each scope (and all scopes) with
  beta's ids, answers as with missing ids; operations that take names answer beta's only-name as a missing one.

`CHECKS` counts the comparisons; the last test prints the count (run with -s to see it).
"""

from __future__ import annotations

import json
import re

import pytest
from django.urls import URLPattern, URLResolver, get_resolver, reverse

from evals.models import Role
from tests.workspace_helpers import KEY, World, build, same_answer, unmasked

pytestmark = [pytest.mark.django_db, pytest.mark.slow]

MISSING = 987654321
CHECKS = {"count": 0}


# A URL's id parameter -> the kind of object it names (the admin's object_id is per model, below).
PARAMETER_KINDS = {
    "eval_set": "eval_set",
    "eval_set_id": "eval_set",
    "rubric_version": "rubric_version",
    "judge": "judge",
    "config_id": "config",
    "run_id": "run",
    "verdict_id": "verdict",
    "probe_run_id": "probe_run",
    "mark": "mark",
    "result": "result",
    "plan": "plan",
    "plan_id": "plan",
    "token": "token",
    "output": "output",
    "output_id": "output",
    "criterion_id": "criterion",
    "watch_id": "watch",
    "group": "group",
    "group_id": "group",
}
BY_ROUTE = {
    "labeling:annotate": "annotation",
    "labeling:save_label": "annotation",
    "labeling:submit": "annotation",
    "formats:import_job": "import_job",
}
SLUGS = {"probe": "padding", "key": KEY, "cell": "false-pass", "part": "development", "fmt": "json"}
ADMIN_MODELS = {
    "evals_evalset": "eval_set",
    "evals_rubricversion": "rubric_version",
    "evals_output": "output",
    "judging_judgeconfig": "judge",
    "judging_judgerun": "run",
    "judging_verdict": "verdict",
    "judging_proberun": "probe_run",
    "calibration_gatingmark": "mark",
    "calibration_gateresult": "result",
    "api_gatetoken": "token",
    "labeling_annotation": "annotation",
}


def routes() -> list[tuple[str, str, list[str]]]:
    """(name, pattern, parameters) of every URL of the site."""
    found: list[tuple[str, str, list[str]]] = []

    def walk(patterns, prefix: str, namespace: str) -> None:
        for p in patterns:
            if isinstance(p, URLResolver):
                inner = f"{namespace}:{p.namespace}" if namespace and p.namespace else (p.namespace or namespace)
                walk(p.url_patterns, prefix + str(p.pattern), inner)
            elif isinstance(p, URLPattern) and p.name:
                name = f"{namespace}:{p.name}" if namespace else p.name
                found.append((name, prefix + str(p.pattern), list(p.pattern.regex.groupindex)))

    walk(get_resolver().url_patterns, "", "")
    return found


def kind_of(name: str, parameter: str) -> str | None:
    if parameter == "pk" or (parameter == "object_id" and name in BY_ROUTE):
        return BY_ROUTE.get(name)
    if parameter == "object_id":
        model = re.sub(r"^admin:|_(change|delete|history)$", "", name)
        return ADMIN_MODELS.get(model)
    return PARAMETER_KINDS.get(parameter)


def asked_afresh(client, user, method: str, path: str):
    """One request in a session of its own: a message another request queued (the admin's "doesn't exist" after
    a redirect not followed) would otherwise show on whichever page is rendered next, and differ by order alone."""
    client.cookies.clear()
    client.force_login(user)
    return getattr(client, method)(path)


def body_of(response) -> bytes:
    return b"".join(response.streaming_content) if response.streaming else response.content


def url(name: str, params: list[str], ids: dict[str, str]) -> str:
    return reverse(name, kwargs={p: ids.get(p, SLUGS.get(p, "x")) for p in params})


@pytest.fixture(scope="module")
def worlds(django_db_setup, django_db_blocker):
    with django_db_blocker.unblock():
        from django.db import transaction

        with transaction.atomic():
            alpha, beta = build("alpha"), build("beta")
            yield alpha, beta
            transaction.set_rollback(True)


def id_routes():
    out = []
    for name, _pattern, params in routes():
        kinds = {p: kind_of(name, p) for p in params}
        if params and all(kinds[p] or p in SLUGS for p in params) and any(kinds[p] for p in params):
            out.append((name, params, kinds))
    return out


ROLES = (Role.ANNOTATOR, Role.REVIEWER, Role.LEAD)


def differences(client, user, mine: World, theirs: World) -> tuple[list[str], int]:
    """Every id route, GET and POST, asked by `user` (of `mine`) with `theirs`' ids and with missing ids: the
    pairs that answer differently, and how many pairs were asked."""
    problems, asked = [], 0
    for name, params, kinds in id_routes():
        id_params = [p for p in params if kinds[p]]
        own = {p: str(mine.ids[kinds[p]]) for p in id_params}
        variants = [({p: str(theirs.ids[kinds[p]]) for p in id_params}, {p: str(MISSING) for p in id_params})]
        if len(id_params) > 1:  # one of the other workspace's ids among this one's own
            for p in id_params:
                variants.append(({**own, p: str(theirs.ids[kinds[p]])}, {**own, p: str(MISSING)}))
        for foreign, missing in variants:
            for method in ("get", "post"):
                a = asked_afresh(client, user, method, url(name, params, foreign))
                b = asked_afresh(client, user, method, url(name, params, missing))
                asked += 1
                if not same_answer(a, b):
                    problems.append(f"{method.upper()} {name} {foreign}: {a.status_code} vs missing {b.status_code}")
    return problems, asked


@pytest.mark.parametrize("role", ROLES)
@pytest.mark.parametrize("direction", ["alpha asks for beta's", "beta asks for alpha's"])
def test_another_workspaces_ids_answer_as_missing_ones_on_every_page(client, worlds, role, direction):
    alpha, beta = worlds if direction.startswith("alpha") else reversed(worlds)
    client.raise_request_exception = False  # a 500 is an answer too: it differs from a missing id's 404
    problems, asked = differences(client, alpha.people[role], alpha, beta)
    CHECKS["count"] += asked
    assert not problems, "\n".join(problems)


def test_the_comparison_tells_a_visible_object_from_a_missing_one(client, worlds):
    """The negative control: beta's lead asking for beta's own ids gets its objects, which must answer otherwise
    than missing ones on most pages; were the comparison blind, the matrix above would pass whatever leaked."""
    _, beta = worlds
    client.raise_request_exception = False
    problems, asked = differences(client, beta.people[Role.LEAD], beta, beta)
    assert len(problems) > asked / 2, (len(problems), asked)


@pytest.mark.parametrize("role", ROLES)
def test_pages_without_ids_never_show_another_workspaces_names(client, worlds, role):
    alpha, beta = worlds
    client.raise_request_exception = False
    client.force_login(alpha.people[role])
    leaks = []
    for name, _pattern, params in routes():
        if params or name.startswith("api:") or "otlp" in name or name in ("logout", "overview:switch_workspace"):
            continue
        response = client.get(reverse(name))
        CHECKS["count"] += 1
        if beta.only_name.encode() in unmasked(body_of(response)):
            leaks.append(f"{name} ({response.status_code})")
    assert not leaks, leaks


def api_operations() -> list[tuple[str, str]]:
    from api.ninja_api import api

    schema = api.get_openapi_schema()
    return [(method.upper(), path) for path, ops in schema["paths"].items() for method in ops]


API_PATH_KINDS = {"run_id": "run", "plan_id": "plan", "watch_id": "watch", "group_id": "group"}
NAME_FIELDS = ("eval_set", "candidate", "calibration_eval_set")


def api_call(client, method: str, path: str, token: str, query: dict | None = None, body: dict | None = None):
    headers = {"HTTP_AUTHORIZATION": f"Bearer {token}"}
    if method == "GET":
        return client.get(path, query or {}, **headers)
    return client.post(path, json.dumps(body or {}), content_type="application/json", **headers)


def test_api_answers_another_workspaces_ids_and_names_as_missing_ones(client, worlds):
    alpha, beta = worlds
    client.raise_request_exception = False
    problems = []
    tokens = {"all": alpha.token, **alpha.scoped_tokens}
    for method, path in api_operations():
        params = re.findall(r"{(\w+)}", path)
        for scope, token in tokens.items():
            if params:
                foreign = path
                missing = path
                for p in params:
                    foreign = foreign.replace(f"{{{p}}}", str(beta.ids[API_PATH_KINDS[p]]))
                    missing = missing.replace(f"{{{p}}}", str(MISSING))
                a, b = api_call(client, method, foreign, token), api_call(client, method, missing, token)
                CHECKS["count"] += 1
                if not same_answer(a, b):
                    problems.append(f"{method} {path} [{scope}]: {a.status_code} {a.content[:80]!r} vs {b.status_code}")
                continue
            for name_field in NAME_FIELDS:
                asked = {name_field: beta.only_name, "rubric": "refund@1", "judge": "gpt-judge"}
                unknown = {**asked, name_field: "no-such-name-anywhere"}
                a = api_call(client, method, path, token, query=asked, body=asked)
                b = api_call(client, method, path, token, query=unknown, body=unknown)
                CHECKS["count"] += 1
                # The answer may repeat the name asked for; apart from it, the two must be the same.
                said = a.content.replace(beta.only_name.encode(), b"no-such-name-anywhere")
                if a.status_code != b.status_code or unmasked(said) != unmasked(b.content):
                    problems.append(f"{method} {path} [{scope}] {name_field}: {a.status_code} vs {b.status_code}")
    assert not problems, "\n".join(problems)


def test_the_matrix_count(worlds):
    """Runs last in this file: the number of comparisons made (quoted in the closing note of issue 36)."""
    print(f"\nauthorization matrix: {CHECKS['count']} checks")
    assert CHECKS["count"] > 0
