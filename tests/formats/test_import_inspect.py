"""Inspect AI eval logs, written by inspect_ai with its mock model, imported as cases and outputs."""

from __future__ import annotations

import io
import zipfile

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError

from evals.models import Case, Output
from evals.problems import ImportFailed
from formats.case_import import import_cases
from formats.readers import open_source
from tests.factories import default_workspace
from tests.inspect_helpers import INSPECT_MODEL, REFUND_SAMPLES, write_log
from tests.io_helpers import dump_cases, row_counts, source

pytestmark = pytest.mark.django_db


def import_log(path, **kwargs):
    with open_source(path) as src:
        return import_cases(workspace=default_workspace(), source=src, eval_set_name="refunds", **kwargs)


def test_an_eval_log_imports_its_samples_as_cases_and_outputs(refund_logs, offline):
    report = import_log(refund_logs["eval"])
    assert report.counts["cases_created"] == 3 and report.counts["outputs_created"] == 3
    case = Case.objects.get(case_id="r-001")
    assert case.input == "I was charged twice for order 1234. Can I get a refund?"
    assert case.reference == "Refund $40.00 for the duplicate charge."
    assert case.metadata == {"inspect": {"task": "refunds", "sample_id": "r-001"}}
    output = Output.objects.get(case=case)
    assert output.agent_version == INSPECT_MODEL  # the model's name, since no --agent-version was given
    assert output.response == "I have refunded the duplicate charge of $40.00; it arrives within 5 business days."
    assert output.tool_calls == [
        {"name": "lookup_order", "args": {"order_id": "1234"}, "response": "order 1234: duplicate charge of $40.00"}
    ]
    assert output.latency_ms is not None and output.latency_ms >= 0
    assert set(output.metadata["inspect"]) >= {"eval_id", "run_id", "model", "sample_uuid"}
    assert Output.objects.get(case__case_id="r-002").tool_calls == []
    assert Output.objects.get(case__case_id="r-002").response == "Refund of $45.00 issued."


def test_a_json_log_of_the_same_run_gives_the_same_cases(refund_logs, offline):
    import_log(refund_logs["eval"])
    from_eval = [(c[0], c[1], c[2], c[3], [o[:3] for o in c[4]]) for c in dump_cases("refunds")]
    Output.objects.all().delete()
    Case.objects.all().delete()
    report = import_log(refund_logs["json"])
    assert report.counts["outputs_created"] == 3
    from_json = [(c[0], c[1], c[2], c[3], [o[:3] for o in c[4]]) for c in dump_cases("refunds")]
    assert from_json == from_eval


def test_importing_the_same_log_twice_changes_nothing(refund_logs, offline):
    import_log(refund_logs["eval"])
    before = row_counts()
    again = import_log(refund_logs["eval"])
    assert again.counts["outputs_created"] == 0 and again.counts["outputs_unchanged"] == 3
    assert row_counts() == before


def test_the_command_takes_a_log_and_an_agent_version(refund_logs, offline):
    out = io.StringIO()
    call_command("import_cases", "--eval-set", "refunds", "--agent-version", "v2", str(refund_logs["eval"]), stdout=out)
    assert "3 outputs created" in out.getvalue()
    assert set(Output.objects.values_list("agent_version", flat=True)) == {"v2"}


def test_a_log_uploaded_as_a_stream_reads_like_a_file(refund_logs, offline):
    report = import_cases(
        workspace=default_workspace(),
        source=source("run.eval", refund_logs["eval"].read_bytes()),
        eval_set_name="refunds",
    )
    assert report.counts["outputs_created"] == 3


def test_reading_a_log_never_needs_tiktoken(refund_logs, offline):
    import tiktoken

    with pytest.raises(AssertionError):  # the negative control: the offline fixture is in force
        tiktoken.get_encoding("o200k_base")
    assert import_log(refund_logs["json"]).counts["outputs_created"] == 3


@pytest.mark.parametrize(
    "name,content,fragment",
    [
        ("run.eval", b"this is not a zip archive", "inspect_ai cannot read this as an Inspect AI eval log"),
        ("run.eval", b"", "inspect_ai cannot read this as an Inspect AI eval log"),
        ("run.json", b'{"version": 2, "status": "success", "eval": 7}', "inspect_ai cannot read this"),
    ],
)
def test_a_file_inspect_cannot_read_is_refused_with_the_reason(name, content, fragment, offline):
    with pytest.raises(ImportFailed) as exc:
        import_cases(workspace=default_workspace(), source=source(name, content), eval_set_name="refunds")
    assert fragment in str(exc.value) and str(exc.value).endswith("Nothing was imported.")
    assert row_counts()["EvalSet"] == 0


def test_a_damaged_eval_archive_writes_nothing(refund_logs, offline, tmp_path):
    broken = tmp_path / "broken.eval"
    with zipfile.ZipFile(refund_logs["eval"]) as original, zipfile.ZipFile(broken, "w") as copy:
        for item in original.infolist():
            data = original.read(item)
            copy.writestr(item, data[: len(data) // 2] if item.filename.startswith("samples/") else data)
    with pytest.raises(CommandError) as exc:
        call_command("import_cases", "--eval-set", "refunds", str(broken))
    assert "inspect_ai cannot read" in str(exc.value)
    assert row_counts()["Case"] == 0 and row_counts()["EvalSet"] == 0


def test_a_log_with_a_failed_sample_is_refused(offline, tmp_path):
    from inspect_ai.log import EvalError, read_eval_log, write_eval_log

    path = write_log(tmp_path, REFUND_SAMPLES[:2], model_graded=False)
    log = read_eval_log(str(path))
    log.samples[1].error = EvalError(message="RuntimeError: the sandbox died", traceback="", traceback_ansi="")
    failed = tmp_path / "failed.eval"
    write_eval_log(log, str(failed))
    with pytest.raises(ImportFailed) as exc:
        import_log(failed)
    message = str(exc.value)
    assert "sample 'r-002' failed in Inspect (RuntimeError: the sandbox died)" in message
    assert 'field "samples[1].error"' in message and "inspect eval-retry" in message
    assert row_counts()["Output"] == 0 and row_counts()["EvalSet"] == 0


def test_a_changed_log_is_refused_like_any_changed_output(refund_logs, offline, tmp_path):
    from inspect_ai.log import read_eval_log, write_eval_log

    import_log(refund_logs["eval"])
    log = read_eval_log(str(refund_logs["eval"]))
    log.samples[2].messages[-1].content = "No: 30 days."
    changed = tmp_path / "changed.eval"
    write_eval_log(log, str(changed))
    with pytest.raises(ImportFailed) as exc:
        import_log(changed)
    assert 'line 3, field "response"' in str(exc.value) and "import it under a new agent_version" in str(exc.value)
    assert Output.objects.get(case__case_id="r-003").response == "Yes, any time."


def test_a_log_with_several_epochs_is_refused(offline, tmp_path):
    from inspect_ai.log import read_eval_log, write_eval_log

    path = write_log(tmp_path, REFUND_SAMPLES[:1], model_graded=False)
    log = read_eval_log(str(path))
    log.samples.append(log.samples[0].model_copy(update={"epoch": 2}))
    two = tmp_path / "two.eval"
    write_eval_log(log, str(two))
    with pytest.raises(ImportFailed) as exc:
        import_log(two)
    assert "the log has 2 epochs" in str(exc.value)
    assert row_counts()["EvalSet"] == 0


@pytest.mark.parametrize("agent_version,expected", [("", INSPECT_MODEL), ("v7", "v7")])
def test_the_upload_page_takes_a_log_and_names_outputs_like_the_command(
    client, lead, refund_logs, offline, agent_version, expected
):
    from django.core.files.uploadedfile import SimpleUploadedFile
    from django.urls import reverse

    client.force_login(lead)
    data = {
        "kind": "cases",
        "cases-eval_set": "refunds",
        "cases-agent_version": agent_version,
        "cases-file": SimpleUploadedFile("run.eval", refund_logs["eval"].read_bytes()),
    }
    page = client.post(reverse("formats:upload"), data).content.decode()
    assert "3 outputs created" in page
    assert set(Output.objects.values_list("agent_version", flat=True)) == {expected}
