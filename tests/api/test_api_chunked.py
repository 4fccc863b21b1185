"""Chunked request bodies (Transfer-Encoding: chunked, no Content-Length) are read, through a real gunicorn.

Django reads a body only as far as its Content-Length says, so a chunked push read as empty ("the file is
empty"). config/chunked.py hands gunicorn's decoded body on with its length. The test client cannot send
chunks, so this starts gunicorn on the test database and sends them with http.client.
"""

from __future__ import annotations

import http.client
import io
import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest
from django.db import connection

from calibration.models import GateResult
from config.chunked import LENGTH_REQUIRED, ChunkedBodies
from evals.models import Output
from tests.api_helpers import create_token
from tests.config.test_smoke import free_port
from tests.factories import bulk_verdicts, make_eval_set, make_judge, make_rubric_version, mark_as_gating
from tests.io_helpers import jsonl

pytestmark = pytest.mark.django_db(transaction=True)  # gunicorn reads what the test wrote: it must be committed
ROOT = Path(__file__).resolve().parents[2]
OUTPUT = {"case_id": "r-001", "agent_version": "v2", "input": "Refund order 1234?", "response": "Refunded $40.00."}


@pytest.fixture
def server():
    db = connection.settings_dict
    url = f"postgres://{db['USER']}:{db['PASSWORD']}@{db['HOST']}:{db['PORT']}/{db['NAME']}"
    if connection.vendor != "postgresql":
        pytest.skip("gunicorn shares the test database only on PostgreSQL")
    env = {**os.environ, "DATABASE_URL": url, "ICEWATER_DEBUG": "0"}
    port = free_port()
    process = subprocess.Popen(
        [sys.executable, "-m", "gunicorn", "config.wsgi:application", "--bind", f"127.0.0.1:{port}", "--workers", "1"],
        cwd=ROOT,
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        for _ in range(200):
            try:
                http.client.HTTPConnection("127.0.0.1", port, timeout=2).connect()
                break
            except OSError:
                time.sleep(0.1)
        yield port
    finally:
        process.terminate()
        process.wait(timeout=20)


def send_chunked(port: int, path: str, token: str, parts: list[bytes], content_type: str) -> tuple[int, dict]:
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=60)
    conn.putrequest("POST", path)
    conn.putheader("Authorization", f"Bearer {token}")
    conn.putheader("Content-Type", content_type)
    conn.putheader("Transfer-Encoding", "chunked")  # and no Content-Length
    conn.endheaders()
    for part in parts:
        conn.send(f"{len(part):x}\r\n".encode() + part + b"\r\n")
    conn.send(b"0\r\n\r\n")
    response = conn.getresponse()
    status, body = response.status, json.loads(response.read())
    conn.close()
    return status, body


@pytest.mark.subprocess
def test_a_chunked_push_and_a_chunked_gate_request_are_read(server, client, lead):
    rv = make_rubric_version("refund", "1")
    judge = make_judge("j")
    mark_as_gating(rv, judge, ["correct_amount"], make_eval_set("cal"), by=lead)
    bulk_verdicts(make_eval_set("rc-7"), rv, judge, {"correct_amount": {"PASS": 50}})
    token = create_token(client, lead, ["push", "gate"], rv)

    file = jsonl(OUTPUT, {**OUTPUT, "case_id": "r-002"}).encode()
    parts = [file[:10], file[10:77], file[77:]]  # chunk boundaries inside records
    status, body = send_chunked(server, "/api/outputs?eval_set=rc-1", token, parts, "application/x-ndjson")
    assert status == 201, body
    assert body["counts"]["outputs_created"] == 2
    assert set(Output.objects.filter(case__eval_set__name="rc-1").values_list("case__case_id", flat=True)) == {
        "r-001",
        "r-002",
    }

    records = json.dumps({"records": [{**OUTPUT, "case_id": "r-003"}]}).encode()
    status, body = send_chunked(
        server, "/api/outputs?eval_set=rc-1", token, [records[:5], records[5:]], "application/json"
    )
    assert status == 201 and body["counts"]["outputs_created"] == 1

    ask = json.dumps({"eval_set": "rc-7", "rubric": "refund@1", "judge": "j"}).encode()
    for address in ("/api/gate", "/calibration/api/gate"):
        status, body = send_chunked(server, address, token, [ask[:7], ask[7:]], "application/json")
        assert status == 200 and body["passed"] is True
    assert GateResult.objects.count() == 2


@pytest.mark.subprocess
def test_a_chunked_body_above_the_limit_is_refused_with_413(server, client, lead, settings):
    rv = make_rubric_version("refund", "1")
    token = create_token(client, lead, ["push"], rv)
    big = jsonl(*({**OUTPUT, "case_id": f"r-{i:06d}"} for i in range(120_000))).encode()  # over the 10 MB limit
    assert len(big) > 10 * 1024 * 1024
    parts = [big[i : i + 1_000_000] for i in range(0, len(big), 1_000_000)]
    status, body = send_chunked(server, "/api/outputs?eval_set=rc-big", token, parts, "application/x-ndjson")
    assert status == 413 and body["limit_bytes"] == 10 * 1024 * 1024 and body["problems"] == []
    assert not Output.objects.exists()


def test_a_server_that_does_not_decode_chunks_answers_411_not_an_empty_body():
    # manage.py runserver (wsgiref) passes the raw socket on, without wsgi.input_terminated: reading it would hang.
    called = []
    app = ChunkedBodies(lambda environ, start_response: called.append(environ) or [])
    started = []
    environ = {"REQUEST_METHOD": "POST", "HTTP_TRANSFER_ENCODING": "chunked", "wsgi.input": io.BytesIO(b"4\r\nabcd")}
    body = b"".join(app(environ, lambda status, headers: started.append((status, dict(headers)))))
    assert started[0][0] == "411 Length Required" and started[0][1]["Content-Type"] == "application/json"
    assert json.loads(body) == {"error": LENGTH_REQUIRED, "problems": []} and not called
    plain = {"REQUEST_METHOD": "POST", "CONTENT_LENGTH": "4", "wsgi.input": io.BytesIO(b"abcd")}
    app(plain, lambda *a: None)
    assert called == [plain]  # the negative control: a body with a length passes untouched
