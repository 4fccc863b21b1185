"""Compressed import files (Inspect AI .eval logs are zip archives): refused before they expand past a bound.

The bombs are real: a few hundred KB of zip that would expand to tens or hundreds of MB. Each refusal
names the limit that refused it, and nothing is written.
"""

from __future__ import annotations

import io
import struct
import zipfile

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.core.management import call_command
from django.core.management.base import CommandError
from django.urls import reverse

from evals.models import Case
from evals.problems import ImportFailed
from formats.case_import import import_cases
from tests.api_helpers import call, create_token
from tests.factories import default_workspace, make_rubric_version
from tests.io_helpers import row_counts, source

pytestmark = pytest.mark.django_db

MB = 1024 * 1024
ZSTD = 93  # zipfile.ZIP_ZSTANDARD once zipfile_zstd (inspect_ai's dependency) is imported


def bomb(members: dict[str, int], compression: int = zipfile.ZIP_DEFLATED) -> bytes:
    """A zip whose members (name -> size) hold that many zero bytes: tiny compressed, large expanded."""
    if compression == ZSTD:
        import zipfile_zstd  # noqa: F401 - teaches zipfile to write zstd members, as inspect_ai does
    out = io.BytesIO()
    zeros = bytes(MB)
    with zipfile.ZipFile(out, "w", compression=compression) as archive:
        for name, size in members.items():
            with archive.open(name, "w", force_zip64=size > 2**31) as member:
                for start in range(0, size, MB):
                    member.write(zeros[: min(MB, size - start)])
    return out.getvalue()


def declare_smaller(data: bytes, declared: int) -> bytes:
    """The same zip with every member's declared (uncompressed) size rewritten to `declared`: a lying directory."""
    data = bytearray(data)
    for signature, offset in ((b"PK\x01\x02", 24), (b"PK\x03\x04", 22)):  # central, local header: file size
        at = data.find(signature)
        while at != -1:
            struct.pack_into("<L", data, at + offset, declared)
            at = data.find(signature, at + 4)
    return bytes(data)


def import_eval(data: bytes):
    return import_cases(workspace=default_workspace(), source=source("run.eval", data), eval_set_name="refunds")


def refused(data: bytes) -> str:
    before = row_counts()
    with pytest.raises(ImportFailed) as caught:
        import_eval(data)
    assert row_counts() == before
    return str(caught.value)


def test_the_bombs_are_small_and_expand_a_lot():
    data = bomb({"samples/1_epoch_1.json": 60 * MB})
    assert len(data) < 100_000
    with zipfile.ZipFile(io.BytesIO(data)) as archive:
        assert archive.infolist()[0].file_size == 60 * MB


def test_an_archive_expanding_past_the_total_bound_is_refused_naming_it():
    # Four members of 15 MB: each under the 20 MB a member may expand to, 60 MB together, above 50 MB.
    data = bomb({f"samples/{i}_epoch_1.json": 15 * MB for i in range(1, 5)})
    message = refused(data)
    assert f"the archive expands to {60 * MB:,} bytes; at most 50 MB in all is read here" in message
    assert "(ICEWATER_UPLOAD_MAX_EXPANDED_MB); import it with manage.py on the server" in message
    assert "Nothing was imported." in message


def test_a_member_expanding_past_its_bound_is_refused_naming_it():
    message = refused(bomb({"header.json": 100, "samples/1_epoch_1.json": 30 * MB}))
    assert f'run.eval, field "samples/1_epoch_1.json": this member expands to {30 * MB:,} bytes' in message
    assert "at most 20 MB a member is read here (ICEWATER_UPLOAD_MAX_MEMBER_MB)" in message


def test_an_archive_of_too_many_members_is_refused_naming_the_bound():
    message = refused(bomb({f"samples/{i}_epoch_1.json": 0 for i in range(10_001)}))
    assert "the archive has 10,001 members; at most 10,000 are read here (ICEWATER_UPLOAD_MAX_MEMBERS)" in message


@pytest.mark.parametrize("compression", [zipfile.ZIP_DEFLATED, ZSTD], ids=["deflate", "zstd"])
def test_a_member_that_expands_past_what_the_directory_declares_is_refused(compression):
    # The directory says 1,000 bytes; the data is 40 MB of zeros. inspect_ai's readers would inflate it whole.
    data = declare_smaller(bomb({"samples/1_epoch_1.json": 40 * MB}, compression), 1000)
    with zipfile.ZipFile(io.BytesIO(data)) as archive:
        assert archive.infolist()[0].file_size == 1000
    message = refused(data)
    assert "this member expands past the 1,000 bytes the archive declares for it" in message


def upload_page_post(client, data: bytes):
    form = {
        "kind": "cases",
        "cases-eval_set": "refunds",
        "cases-agent_version": "",
        "cases-file": SimpleUploadedFile("run.eval", data),
    }
    return client.post(reverse("formats:upload"), form).content.decode()


def test_a_bomb_on_the_import_page_is_refused_naming_the_limit_and_writes_nothing(client, lead):
    client.force_login(lead)
    before = row_counts()
    page = upload_page_post(client, bomb({"samples/1_epoch_1.json": 200 * MB}))
    assert 'data-result="failed"' in page
    assert f"this member expands to {200 * MB:,} bytes; at most 20 MB a member is read here" in page
    assert "ICEWATER_UPLOAD_MAX_MEMBER_MB" in page
    assert row_counts() == before


def test_a_legal_eval_log_still_imports_on_the_page(client, lead, refund_logs, offline):
    client.force_login(lead)
    page = upload_page_post(client, refund_logs["eval"].read_bytes())
    assert 'data-result="ok"' in page
    assert Case.objects.filter(eval_set__name="refunds").count() == 3


@pytest.fixture
def push_token(client, lead):
    return create_token(client, lead, ["push"], make_rubric_version("refund", "1"), judges=("grader",))


@pytest.mark.parametrize("path", ["/api/outputs", "/api/verdicts"])
def test_a_zstd_bomb_pushed_to_the_api_is_refused_naming_the_limit(client, push_token, path):
    # inspect_ai writes zstd members; a 1 MB one of these grew a web worker past 3.3 GB.
    data = bomb({"samples/1_epoch_1.json": 300 * MB}, ZSTD)
    assert len(data) < 1_000_000
    call(client, "POST", "/api/outputs", push_token, {"records": [{"case_id": "c1", "input": "Q"}]}, eval_set="rc")
    before = row_counts()
    query = {"eval_set": "rc", "filename": "run.eval", "rubric": "refund@1", "judge": "grader"}
    response = call(client, "POST", path, push_token, data, "application/octet-stream", **query)
    assert response.status_code == 400, response.content
    problem = response.json()["problems"][0]
    assert problem["field"] == "samples/1_epoch_1.json"
    assert "at most 20 MB a member is read here (ICEWATER_UPLOAD_MAX_MEMBER_MB)" in problem["message"]
    assert row_counts() == before


def test_a_legal_eval_log_still_imports_through_the_api(client, push_token, refund_logs, offline):
    data = refund_logs["eval"].read_bytes()
    response = call(
        client, "POST", "/api/outputs", push_token, data, "application/octet-stream", eval_set="rc", filename="r.eval"
    )
    assert response.status_code == 201 and response.json()["counts"]["outputs_created"] == 3


def test_the_command_line_has_its_own_larger_configurable_bound(tmp_path, settings, refund_logs, offline):
    path = tmp_path / "run.eval"
    path.write_bytes(bomb({"samples/1_epoch_1.json": 30 * MB}))  # beyond the page's 20 MB a member
    settings.ICEWATER_CLI_MAX_MEMBER_BYTES = 10 * MB
    before = row_counts()
    with pytest.raises(CommandError) as caught:
        call_command("import_cases", "--eval-set", "refunds", str(path), stdout=io.StringIO())
    assert "at most 10 MB a member is read here (ICEWATER_CLI_MAX_MEMBER_MB)" in str(caught.value)
    assert "manage.py on the server" not in str(caught.value)
    settings.ICEWATER_CLI_MAX_MEMBER_BYTES = 512 * MB
    with pytest.raises(CommandError) as caught:  # past the bounds now: inspect_ai says it is no log
        call_command("import_cases", "--eval-set", "refunds", str(path), stdout=io.StringIO())
    assert "inspect_ai cannot read this as an Inspect AI eval log" in str(caught.value)
    assert row_counts() == before
    call_command("import_cases", "--eval-set", "refunds", str(refund_logs["eval"]), stdout=io.StringIO())
    assert Case.objects.filter(eval_set__name="refunds").count() == 3
