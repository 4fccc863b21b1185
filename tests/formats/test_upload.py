"""The lead's upload page: same importers and messages as the commands; roles and CSRF enforced by the server."""

from __future__ import annotations

import json
import re

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.test import Client
from django.urls import reverse

from evals.models import Case, RubricVersion
from formats.case_import import import_cases
from formats.rubric_import import import_rubric
from labeling.models import Label
from tests.factories import default_workspace
from tests.io_helpers import DATA, data_source, row_counts

pytestmark = pytest.mark.django_db
URL = reverse("formats:upload")


def upload(name: str, content: bytes | None = None) -> SimpleUploadedFile:
    return SimpleUploadedFile(name, content if content is not None else (DATA / name).read_bytes())


def post_rubric(client, file):
    return client.post(URL, {"kind": "rubric", "rubric-file": file})


def test_anonymous_users_are_sent_to_log_in(client):
    response = client.get(URL)
    assert response.status_code == 302 and response["Location"].startswith(reverse("login"))


@pytest.mark.parametrize(("who", "status"), [("annotator", 403), ("reviewer", 403), ("outsider", 302)])
def test_only_leads_may_open_or_post_to_the_page(client, request, who, status):
    # An inactive account (such as one an import created) is not signed in at all: sent to log in.
    client.force_login(request.getfixturevalue(who))
    assert client.get(URL).status_code == status
    before = row_counts()
    assert post_rubric(client, upload("rubric.json")).status_code == status
    assert row_counts() == before


def test_the_lead_sees_three_upload_forms_and_the_menu_entry(client, lead):
    client.force_login(lead)
    page = client.get(URL).content.decode()
    for kind in ("rubric", "cases", "labels"):
        assert f'id="upload-{kind}"' in page and f'name="kind" value="{kind}"' in page
    assert f'href="{URL}">Import</a>' in client.get(reverse("home")).content.decode()


def test_other_roles_do_not_see_the_menu_entry(client, annotator):
    client.force_login(annotator)
    assert f'href="{URL}"' not in client.get(reverse("home")).content.decode()


def test_a_lead_imports_a_rubric_and_sees_what_was_created(client, lead):
    client.force_login(lead)
    page = post_rubric(client, upload("rubric.json")).content.decode()
    assert 'data-result="ok"' in page
    assert "rubric.json: imported refund-support@1 (3 criteria) as a draft." in page
    assert RubricVersion.objects.get().ref == "refund-support@1"
    again = post_rubric(client, upload("rubric.json")).content.decode()
    assert "already imported with the same content; nothing changed" in again


def test_cases_upload_creates_the_eval_set_and_answers_htmx_with_the_result_only(client, lead):
    client.force_login(lead)
    data = {
        "kind": "cases",
        "cases-eval_set": "refunds",
        "cases-agent_version": "default",
        "cases-file": upload("cases.csv"),
    }
    response = client.post(URL, data, headers={"HX-Request": "true"})
    body = response.content.decode()
    assert response.status_code == 200
    # The result region alone: the form, and the file chosen in it, stay on the page.
    assert body.lstrip().startswith('<div id="upload-result-cases"') and "<form" not in body and "<html" not in body
    assert 'cases.csv -&gt; eval set "refunds" (new): 3 cases created' in body.replace("&quot;", '"')
    assert Case.objects.filter(eval_set__name="refunds").count() == 3


def test_labels_upload_uses_the_chosen_eval_set_and_rubric_version(client, lead):
    import_rubric(workspace=default_workspace(), source=data_source("rubric.json"))
    import_cases(workspace=default_workspace(), source=data_source("cases.jsonl"), eval_set_name="refunds")
    client.force_login(lead)
    rv = RubricVersion.objects.by_ref("refund-support@1", default_workspace())
    data = {
        "kind": "labels",
        "labels-eval_set": "refunds",
        "labels-rubric": rv.pk,
        "labels-agent_version": "default",
        "labels-file": upload("labels.jsonl"),
    }
    page = client.post(URL, data).content.decode()
    assert 'data-result="ok"' in page and "9 labels created in 7 new annotations" in page
    assert "cannot log in until a lead activates them" in page
    assert Label.objects.count() == 9


def test_a_garbage_upload_shows_the_problems_with_lines_and_writes_nothing(client, lead):
    client.force_login(lead)
    before = row_counts()
    garbage = (
        b'{"case_id": "c1", "input": "Q", "response": "A"}\nnot json at all\n{"case_id": "c2", "latency_ms": "x"}\n'
    )
    data = {
        "kind": "cases",
        "cases-eval_set": "new-set",
        "cases-agent_version": "default",
        "cases-file": upload("junk.jsonl", garbage),
    }
    page = client.post(URL, data).content.decode().replace("&quot;", '"')
    assert 'data-result="failed"' in page
    assert "junk.jsonl, line 2: not valid JSON" in page
    assert 'junk.jsonl, line 3, field "input": is missing' in page
    assert "Nothing was imported." in page
    assert row_counts() == before


def test_a_rubric_uploaded_as_cases_is_named_as_the_wrong_kind(client, lead):
    client.force_login(lead)
    data = {
        "kind": "cases",
        "cases-eval_set": "x",
        "cases-agent_version": "default",
        "cases-file": upload("rubric.yaml"),
    }
    page = client.post(URL, data).content.decode()
    assert "rubric.yaml: this is a YAML file, as rubrics are; import a rubric with import_rubric" in page
    assert row_counts()["EvalSet"] == 0


def test_a_missing_file_or_field_is_a_form_error_not_an_import(client, lead):
    client.force_login(lead)
    page = client.post(URL, {"kind": "labels", "labels-agent_version": "default"}).content.decode()
    assert page.count("This field is required.") == 3  # eval set, rubric version, file
    assert 'data-result="invalid"' in page and 'data-result="ok"' not in page and 'data-result="failed"' not in page
    assert client.post(URL, {"kind": "everything"}).status_code == 400


def test_file_names_and_messages_are_escaped(client, lead):
    client.force_login(lead)
    page = post_rubric(client, upload("<img src=x onerror=alert(1)>.json", b"{oops")).content.decode()
    assert "<img src=x" not in page
    assert "&lt;img src=x onerror=alert(1)&gt;.json, line 1: not valid JSON" in page


def test_posting_without_the_csrf_token_is_refused_and_writes_nothing(lead):
    client = Client(enforce_csrf_checks=True)
    client.force_login(lead)
    before = row_counts()
    response = post_rubric(client, upload("rubric.json"))
    assert response.status_code == 403
    assert row_counts() == before
    page = client.get(URL)
    token = page.cookies["csrftoken"].value
    response = client.post(
        URL, {"kind": "rubric", "rubric-file": upload("rubric.json")}, headers={"X-CSRFToken": token}
    )
    assert response.status_code == 200 and RubricVersion.objects.count() == 1


def cases_file(size: int) -> bytes:
    """A valid cases JSONL file of exactly `size` bytes."""
    lines, total, i = [], 0, 0
    while True:
        line = json.dumps({"case_id": f"c{i:06d}", "input": "Q" * 80, "response": "A"}) + "\n"
        if total + 2 * len(line) > size:
            break
        lines.append(line)
        total += len(line)
        i += 1
    base = len(json.dumps({"case_id": "last", "input": "", "response": "A"}) + "\n")
    lines.append(json.dumps({"case_id": "last", "input": "Q" * (size - total - base), "response": "A"}) + "\n")
    data = "".join(lines).encode()
    assert len(data) == size
    return data


def post_cases(client, eval_set: str, content: bytes, **headers):
    data = {
        "kind": "cases",
        "cases-eval_set": eval_set,
        "cases-agent_version": "default",
        "cases-file": upload("big.jsonl", content),
    }
    response = client.post(URL, data, headers=headers)
    assert response.status_code == 200
    return response.content.decode()


def test_the_page_says_how_big_a_file_it_takes(client, lead, settings):
    settings.ICEWATER_UPLOAD_MAX_BYTES = 3 * 1024 * 1024
    client.force_login(lead)
    assert "This page imports files of up to 3 MB" in client.get(URL).content.decode()


def test_a_file_beyond_the_upload_limit_is_refused_with_a_message_and_writes_nothing(client, lead, settings):
    settings.ICEWATER_UPLOAD_MAX_BYTES = 1024 * 1024
    client.force_login(lead)
    at_limit = cases_file(1024 * 1024)
    assert 'data-result="ok"' in post_cases(client, "fits", at_limit)
    assert Case.objects.filter(eval_set__name="fits").count() == at_limit.count(b"\n")
    before = row_counts()
    for headers in ({}, {"HX-Request": "true"}):
        page = post_cases(client, "too-big", at_limit + b"\n", **headers)
        assert "big.jsonl is larger than 1 MB, the most this page imports" in page
        assert "Import it from the command line, which has no such limit. Nothing was imported." in page
        assert 'data-result="ok"' not in page and "This field is required" not in page
        assert row_counts() == before
    assert not Case.objects.filter(eval_set__name="too-big").exists()


def test_the_limit_is_checked_with_the_csrf_token_still_required(lead, settings):
    settings.ICEWATER_UPLOAD_MAX_BYTES = 1024 * 1024
    client = Client(enforce_csrf_checks=True)
    client.force_login(lead)
    before = row_counts()
    data = {"kind": "cases", "cases-eval_set": "x", "cases-agent_version": "default"}
    assert client.post(URL, {**data, "cases-file": upload("c.jsonl", cases_file(2048))}).status_code == 403
    assert client.post(URL, {**data, "cases-file": upload("c.jsonl", cases_file(2 * 1024 * 1024))}).status_code == 403
    assert row_counts() == before


def test_extra_file_fields_are_refused_and_nothing_is_imported(client, lead):
    # Five more files of 9 MB, each under the 10 MB a file may be, beside a valid one: refused as a whole.
    client.force_login(lead)
    before = row_counts()
    data = {"kind": "cases", "cases-eval_set": "x", "cases-agent_version": "", "cases-file": upload("cases.csv")}
    data.update({f"extra{i}": upload(f"extra{i}.bin", bytes(9 * 1024 * 1024)) for i in range(5)})
    assert client.post(URL, data).status_code == 400
    assert row_counts() == before
    alone = {**{k: v for k, v in data.items() if not k.startswith("extra")}, "cases-file": upload("cases.csv")}
    assert 'data-result="ok"' in client.post(URL, alone).content.decode()


def test_large_text_fields_beside_the_file_are_refused(client, lead):
    client.force_login(lead)
    before = row_counts()
    data = {"kind": "cases", "cases-eval_set": "x", "cases-agent_version": "", "cases-file": upload("cases.csv")}
    data.update({f"extra{i}": "x" * (300 * 1024) for i in range(5)})  # 1.5 MB of form text
    assert client.post(URL, data).status_code == 400
    assert row_counts() == before


@pytest.mark.parametrize(
    ("kind", "extra", "read"),
    [
        ("cases", {"cases-eval_set": "x"}, "cases and outputs are read from .jsonl, .ndjson, .csv, .json"),
        ("labels", {}, "labels are read from .jsonl, .ndjson, .csv, .json files"),
        ("rubric", {}, "rubrics are read from .json, .yaml, .yml files"),
    ],
)
def test_a_file_of_another_type_is_refused_as_unsupported_not_read_as_csv(client, lead, kind, extra, read):
    rv = import_rubric(
        workspace=default_workspace(), source=data_source("rubric.json")
    ).counts and RubricVersion.objects.by_ref("refund-support@1", default_workspace())
    import_cases(workspace=default_workspace(), source=data_source("cases.jsonl"), eval_set_name="refunds")
    client.force_login(lead)
    before = row_counts()
    data = {"kind": kind, f"{kind}-file": upload("notes.txt", b"Remember to ask Rita about the refunds.\n"), **extra}
    if kind == "labels":
        data.update({"labels-eval_set": "refunds", "labels-rubric": rv.pk})
    page = client.post(URL, data).content.decode().replace("&quot;", '"')
    assert f'notes.txt: unsupported file type ".txt": {read}' in page
    assert "unknown column" not in page and row_counts() == before


def test_a_pushed_body_without_a_file_name_is_still_told_apart_by_its_content(lead):
    report = import_cases(
        workspace=default_workspace(),
        source=source_named("records", b'{"case_id": "c1", "input": "Q", "response": "A"}\n'),
        eval_set_name="e",
    )
    assert report.counts["cases_created"] == 1


def source_named(name: str, content: bytes):
    from tests.io_helpers import source

    return source(name, content)


def test_both_agent_version_fields_start_empty_and_empty_means_default(client, lead):
    import_rubric(workspace=default_workspace(), source=data_source("rubric.json"))
    import_cases(workspace=default_workspace(), source=data_source("cases.jsonl"), eval_set_name="refunds")
    client.force_login(lead)
    page = client.get(URL).content.decode()
    for kind in ("cases", "labels"):
        tag = re.search(rf'<input[^>]*name="{kind}-agent_version"[^>]*>', page).group(0)
        assert "value=" not in tag and "required" not in tag
    assert page.count("(empty: default)") == 2
    data = {
        "kind": "labels",
        "labels-eval_set": "refunds",
        "labels-rubric": RubricVersion.objects.by_ref("refund-support@1", default_workspace()).pk,
        "labels-agent_version": "",
        "labels-file": upload("labels.jsonl"),
    }
    assert 'data-result="ok"' in client.post(URL, data).content.decode()
    assert Label.objects.count() == 9


def test_a_get_on_a_form_target_is_a_page_that_says_so(client, annotator):
    client.force_login(annotator)
    response = client.get(reverse("labeling:next", args=[1]))
    assert response.status_code == 405 and response["Allow"] == "POST"
    page = response.content.decode()
    assert "<html" in page and "Nothing to show here" in page and "where a form sends what you submit" in page
    assert client.post(reverse("labeling:next", args=[1])).status_code != 405  # the form's own way still works


def test_the_api_keeps_its_own_405(client):
    response = client.get("/api/outputs")
    assert response.status_code == 405 and "<html" not in response.content.decode()
