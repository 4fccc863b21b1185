"""Annotators clicking Next at the same moment never get the same slot, and what the server acknowledged is
in the database (real PostgreSQL, real threads). bench/labeling_load.py --crowd 32/100 checks the same on
gunicorn with a hundred people; these are its small versions."""

from __future__ import annotations

import http.client
import re
import threading
from collections import Counter
from urllib.parse import urlencode, urlparse

import pytest
from django.db import connections
from django.test import Client

from labeling.models import Annotation, Label
from labeling.queue import claim_next, current_queue
from tests.factories import labeling_setup, make_user
from tests.labeling_helpers import next_url

pytestmark = pytest.mark.django_db(transaction=True)


def run_together(n: int, work) -> list:
    """Start n threads at the same instant (a barrier) and collect what each returned or raised."""
    barrier = threading.Barrier(n)
    results: list = [None] * n

    def target(i: int) -> None:
        try:
            barrier.wait(timeout=30)
            results[i] = work(i)
        except Exception as exc:  # noqa: BLE001 - the test inspects it
            results[i] = exc
        finally:
            connections.close_all()

    threads = [threading.Thread(target=target, args=(i,)) for i in range(n)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=60)
    assert not any(t.is_alive() for t in threads), "a Next call hung"
    return results


def assert_slots_are_unique():
    rows = list(Annotation.objects.values_list("output_id", "rubric_version_id", "slot", "annotator_id"))
    assert len({r[:3] for r in rows}) == len(rows), "two annotations share a slot"
    assert len({(r[0], r[1], r[3]) for r in rows}) == len(rows), "an annotator holds two slots of one output"
    return rows


@pytest.mark.parametrize(("racers", "n_outputs"), [(10, 3), (32, 10)])
def test_annotators_racing_for_fewer_slots_fill_each_slot_once(racers, n_outputs):
    eval_set, rv, outputs = labeling_setup(n_outputs=n_outputs)
    queue = current_queue(eval_set)
    users = [make_user(f"racer{i}") for i in range(racers)]

    def work(i):
        claim = claim_next(user=users[i], queue=queue)
        return claim.annotation.pk if claim else None

    results = run_together(racers, work)
    errors = [r for r in results if isinstance(r, Exception)]
    assert not errors, errors
    rows = assert_slots_are_unique()
    # Every slot is filled (nobody is told "nothing left" while a slot is free) and nothing more: no output goes
    # to more people than its two labels need.
    assert len(rows) == 2 * n_outputs
    assert sum(r is not None for r in results) == 2 * n_outputs
    assert Counter(r[0] for r in rows) == {o.pk: 2 for o in outputs}


def test_one_person_double_clicking_next_reserves_one_output():
    eval_set, rv, outputs = labeling_setup(n_outputs=4)
    queue = current_queue(eval_set)
    user = make_user("double-clicker")
    results = run_together(4, lambda i: claim_next(user=user, queue=queue).annotation.pk)
    assert len(set(results)) == 1
    assert Annotation.objects.filter(annotator=user).count() == 1


def _session(user, base: str) -> tuple[str, str]:
    """A logged-in session cookie and a CSRF token the live server accepts."""
    client = Client()
    client.force_login(user)
    session = client.cookies["sessionid"].value
    url = urlparse(base)
    conn = http.client.HTTPConnection(url.hostname, url.port, timeout=30)
    conn.request("GET", "/", headers={"Cookie": f"sessionid={session}"})
    response = conn.getresponse()
    body = response.read().decode()
    cookie = re.search(r"csrftoken=([^;]+)", response.getheader("Set-Cookie") or "").group(1)
    token = re.search(r'"X-CSRFToken": "([^"]+)"', body).group(1)
    conn.close()
    return f"sessionid={session}; csrftoken={cookie}", token


def _post(base: str, path: str, session: tuple[str, str], form: dict | None = None) -> tuple[int, str]:
    url = urlparse(base)
    cookie, token = session
    conn = http.client.HTTPConnection(url.hostname, url.port, timeout=30)
    headers = {"Cookie": cookie, "X-CSRFToken": token, "Referer": base, "HX-Request": "true"}
    if form is not None:
        headers["Content-Type"] = "application/x-www-form-urlencoded"
    conn.request("POST", path, body=urlencode(form or {}), headers=headers)
    response = conn.getresponse()
    response.read()
    conn.close()
    return response.status, response.getheader("Location") or ""


def test_concurrent_next_and_saves_over_http_never_share_a_slot_nor_lose_an_acknowledged_save(live_server):
    eval_set, rv, outputs = labeling_setup(n_outputs=2)
    users = [make_user(f"web{i}") for i in range(8)]
    sessions = [_session(u, live_server.url) for u in users]

    results = run_together(8, lambda i: _post(live_server.url, next_url(eval_set), sessions[i]))
    assert all(not isinstance(r, Exception) and r[0] == 302 for r in results), results
    rows = assert_slots_are_unique()
    assert len(rows) == 4
    handed = [(i, int(r[1].rstrip("/").split("/")[-1])) for i, r in enumerate(results) if "/annotations/" in r[1]]
    assert len(handed) == 4

    # The four who got a case save every criterion at once, each criterion alternating PASS and FAIL, twice:
    # the second answer replaces the first, and only answers the server said 200 to count.
    keys = list(rv.criteria.order_by("order").values_list("key", flat=True))
    answers = [("PASS", "refund of $40.00"), ("FAIL", "NONE")]

    def save_all(n):
        i, pk = handed[n]
        acked = {}
        for round_ in range(2):
            for k, key in enumerate(keys):
                outcome, evidence = answers[(n + k + round_) % 2]
                form = {"criterion": key, "outcome": outcome, "evidence": evidence, "rubric_version": rv.pk}
                status, _ = _post(live_server.url, f"/annotations/{pk}/save", sessions[i], form)
                if status == 200:
                    acked[key] = (outcome, evidence)
        return pk, acked

    saved = run_together(len(handed), save_all)
    assert not [r for r in saved if isinstance(r, Exception)], saved
    in_db = {
        (pk, key): (outcome, evidence)
        for pk, key, outcome, evidence in Label.objects.current().values_list(
            "annotation_id", "criterion__key", "outcome", "evidence"
        )
    }
    expected = {(pk, key): answer for pk, acked in saved for key, answer in acked.items()}
    assert len(expected) == 4 * len(keys)  # every save was acknowledged (nothing refused under the race)
    assert in_db == expected
    # Negative control: had the second round's saves been lost, the first round's answers would be there instead,
    # and they differ from what was acknowledged last on every criterion.
    first = {(handed[n][1], key): answers[(n + k) % 2] for n in range(len(handed)) for k, key in enumerate(keys)}
    assert all(first[key] != in_db[key] for key in expected)
