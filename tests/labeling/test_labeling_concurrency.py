"""Two annotators clicking Next at the same moment never get the same slot (real PostgreSQL, real threads)."""

from __future__ import annotations

import http.client
import re
import threading
from collections import Counter
from urllib.parse import urlparse

import pytest
from django.db import connections
from django.test import Client

from labeling.models import Annotation
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


def test_ten_annotators_racing_for_six_slots_fill_each_slot_once():
    eval_set, rv, outputs = labeling_setup(n_outputs=3)
    queue = current_queue(eval_set)
    users = [make_user(f"racer{i}") for i in range(10)]

    def work(i):
        claim = claim_next(user=users[i], queue=queue)
        return claim.annotation.pk if claim else None

    results = run_together(10, work)
    errors = [r for r in results if isinstance(r, Exception)]
    assert not errors, errors
    rows = assert_slots_are_unique()
    # Every slot is filled (nobody is told "nothing left" while a slot is free) and nothing more.
    assert len(rows) == 6
    assert sum(r is not None for r in results) == 6
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


def test_concurrent_next_requests_over_http_never_share_a_slot(live_server):
    eval_set, rv, outputs = labeling_setup(n_outputs=2)
    users = [make_user(f"web{i}") for i in range(8)]
    sessions = [_session(u, live_server.url) for u in users]
    url = urlparse(live_server.url)

    def work(i):
        cookie, token = sessions[i]
        conn = http.client.HTTPConnection(url.hostname, url.port, timeout=30)
        conn.request(
            "POST", next_url(eval_set), headers={"Cookie": cookie, "X-CSRFToken": token, "Referer": live_server.url}
        )
        response = conn.getresponse()
        response.read()
        conn.close()
        return response.status, response.getheader("Location")

    results = run_together(8, work)
    assert all(not isinstance(r, Exception) and r[0] == 302 for r in results), results
    rows = assert_slots_are_unique()
    assert len(rows) == 4
    assert sum("/annotations/" in r[1] for r in results) == 4
