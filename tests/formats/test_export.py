"""export_data: every format imports back to the same data, and a second import changes nothing."""

from __future__ import annotations

import csv
import io
import json

import pytest
from django.core.management import CommandError, call_command

from evals.models import EvalSet
from formats.case_import import import_cases
from formats.export import FORMATS, ExportError
from formats.label_import import import_labels
from formats.rubric_import import import_rubric
from formats.verdicts import EXPORT_WHAT as WHAT
from formats.verdicts import export_data
from judging.models import JudgeRun, Verdict
from labeling.models import Annotation, GoldLabel, Label
from tests.factories import default_workspace
from tests.io_helpers import DATA, data_source, dump_cases, dump_gold, dump_labels, row_counts, source

pytestmark = pytest.mark.django_db
REF = "refund-support@1"
# What a spreadsheet may run as a formula (OWASP), as docs/formats.md lists it.
FORMULA_STARTS = ("=", "+", "-", "@", "\t", "\r")


@pytest.fixture
def refunds():
    import_rubric(workspace=default_workspace(), source=data_source("rubric.json"))
    import_cases(workspace=default_workspace(), source=data_source("cases.jsonl"), eval_set_name="refunds")
    import_cases(
        workspace=default_workspace(), source=data_source("refunds.evalset.json"), eval_set_name="refunds"
    )  # cases without outputs too
    import_labels(
        workspace=default_workspace(), source=data_source("labels.jsonl"), eval_set_name="refunds", rubric_ref=REF
    )


def export(what: str, fmt: str, **kwargs) -> str:
    out = io.StringIO()
    export_data(workspace=default_workspace(), eval_set_name="refunds", what=what, fmt=fmt, stream=out, **kwargs)
    return out.getvalue()


FILE_NAMES = {"jsonl": "export.jsonl", "csv": "export.csv", "adk": "export.evalset.json"}


@pytest.mark.parametrize("fmt", ["jsonl", "csv", "adk"])
def test_cases_round_trip_in_every_format(refunds, fmt):
    text = export("cases", fmt)
    before = dump_cases("refunds")
    if fmt == "adk":  # an ADK eval set carries cases, not outputs
        before = [row[:4] + ((),) for row in before]
    EvalSet.objects.get(name="refunds").delete()
    name = FILE_NAMES[fmt]
    import_cases(workspace=default_workspace(), source=source(name, text), eval_set_name="refunds")
    assert dump_cases("refunds") == before
    counts = row_counts()
    report = import_cases(workspace=default_workspace(), source=source(name, text), eval_set_name="refunds")
    assert not report.changed and row_counts() == counts
    assert export("cases", fmt) == text


def test_exported_cases_look_like_the_import_format(refunds):
    first = json.loads(export("cases", "jsonl").splitlines()[0])
    assert first == {
        "case_id": "double_charge",
        "input": "I was charged twice for order 1234. Can I get a refund?",
        "reference": "I have refunded the duplicate charge of $40.00; it arrives within 5 business days.",
        "metadata": first["metadata"],
    }  # a case without outputs: no response, so it imports as a case only
    header = export("cases", "csv").splitlines()[0]
    assert header == "case_id,agent_version,input,reference,response,tool_calls,latency_ms,metadata,output_metadata"


def test_the_adk_export_is_an_adk_eval_set(refunds):
    doc = json.loads(export("cases", "adk"))
    assert doc["eval_set_id"] == "refunds" and doc["name"] == "refunds"
    by_id = {c["eval_id"]: c for c in doc["eval_cases"]}
    parcel = by_id["lost_parcel"]["conversation"]
    assert [t["invocation_id"] for t in parcel] == ["e-2a", "e-2b"]
    assert parcel[1]["user_content"] == {"role": "user", "parts": [{"text": "Yes please."}]}
    assert parcel[1]["intermediate_data"] == {"tool_uses": [{"name": "issue_refund", "args": {"amount": 25.5}}]}
    assert (
        by_id["r-002"]["conversation"][0]["final_response"]["parts"][0]["text"]
        == "Refund $25.50 after the carrier confirms loss."
    )


@pytest.mark.parametrize("fmt", ["jsonl", "csv"])
def test_labels_round_trip_with_their_slots(refunds, fmt):
    text = export("labels", fmt, rubric_ref=REF)
    before = dump_labels("refunds")
    Annotation.objects.all().delete()
    import_labels(
        workspace=default_workspace(), source=source(f"labels.{fmt}", text), eval_set_name="refunds", rubric_ref=REF
    )
    assert dump_labels("refunds") == before
    counts = row_counts()
    report = import_labels(
        workspace=default_workspace(), source=source(f"labels.{fmt}", text), eval_set_name="refunds", rubric_ref=REF
    )
    assert not report.changed and row_counts() == counts
    assert export("labels", fmt, rubric_ref=REF) == text


def test_gold_is_the_adjudication_where_there_is_one_else_the_annotators_majority(refunds):
    lines = [json.loads(line) for line in export("gold", "jsonl", rubric_ref=REF).splitlines()]
    # Worked from tests/data/labels.jsonl: r-001/v1 next_step is PASS vs FAIL (no majority, no line);
    # r-002/v1 within_policy is adjudicated by sam; r-003/v1 has one label only, which is no majority.
    assert [(g["case_id"], g["agent_version"], g["criterion"], g["adjudicator"], g["outcome"]) for g in lines] == [
        ("r-001", "v1", "correct_amount", "agreement", "PASS"),
        ("r-001", "v2", "correct_amount", "agreement", "FAIL"),
        ("r-002", "v1", "within_policy", "sam", "FAIL"),
    ]
    assert lines[0]["rationale"] == "2 of 2 annotators agree"
    assert lines[2]["rationale"] == "A voucher is beyond the refund policy."


@pytest.mark.parametrize("fmt", ["jsonl", "csv"])
def test_gold_round_trips_without_turning_agreement_into_adjudications(refunds, fmt):
    text = export("gold", fmt, rubric_ref=REF)
    before = dump_gold("refunds")
    GoldLabel.objects.all().delete()
    report = import_labels(
        workspace=default_workspace(), source=source(f"gold.{fmt}", text), eval_set_name="refunds", rubric_ref=REF
    )
    assert report.counts["gold_created"] == 1 and report.counts["agreement_confirmed"] == 2
    assert dump_gold("refunds") == before
    counts = row_counts()
    assert not import_labels(
        workspace=default_workspace(), source=source(f"gold.{fmt}", text), eval_set_name="refunds", rubric_ref=REF
    ).changed
    assert row_counts() == counts
    assert export("gold", fmt, rubric_ref=REF) == text


def test_a_whole_installation_moves_by_export_and_import(refunds):
    cases, labels, gold = (
        export("cases", "jsonl"),
        export("labels", "csv", rubric_ref=REF),
        export("gold", "jsonl", rubric_ref=REF),
    )
    want = (dump_cases("refunds"), dump_labels("refunds"), dump_gold("refunds"))
    Annotation.objects.all().delete()
    GoldLabel.objects.all().delete()
    EvalSet.objects.all().delete()
    import_cases(workspace=default_workspace(), source=source("c.jsonl", cases), eval_set_name="refunds")
    import_labels(
        workspace=default_workspace(), source=source("l.csv", labels), eval_set_name="refunds", rubric_ref=REF
    )
    import_labels(
        workspace=default_workspace(), source=source("g.jsonl", gold), eval_set_name="refunds", rubric_ref=REF
    )
    assert (dump_cases("refunds"), dump_labels("refunds"), dump_gold("refunds")) == want


def test_the_command_writes_stdout_or_a_file(refunds, tmp_path, capsys):
    call_command("export_data", "--eval-set", "refunds", "--what", "labels", "--rubric", REF, "--format", "csv")
    out = capsys.readouterr()
    assert out.out.splitlines()[0] == "case_id,agent_version,criterion,annotator,outcome,evidence"
    assert len(out.out.splitlines()) == 10  # header + 9 labels
    assert "Exported 9 records (labels) to stdout." in out.err
    target = tmp_path / "cases.jsonl"
    call_command("export_data", "--eval-set", "refunds", "--what", "cases", "--output", str(target))
    assert len(target.read_text().splitlines()) == 8  # 5 outputs + 3 cases without outputs
    assert [p.name for p in tmp_path.iterdir()] == ["cases.jsonl"]  # no temporary file left behind


def test_a_failed_export_leaves_no_file(refunds, tmp_path):
    target = tmp_path / "out.jsonl"
    with pytest.raises(CommandError, match="needs --rubric NAME@VERSION"):
        call_command("export_data", "--eval-set", "refunds", "--what", "gold", "--output", str(target))
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"eval_set_name": "nope", "what": "cases"}, 'there is no eval set "nope"'),
        ({"eval_set_name": "refunds", "what": "labels"}, "--what labels needs --rubric NAME@VERSION"),
        ({"eval_set_name": "refunds", "what": "labels", "rubric_ref": "refund-support@7"}, "has no version '7'"),
        ({"eval_set_name": "refunds", "what": "gold", "fmt": "adk", "rubric_ref": REF}, "--format adk is for cases"),
        ({"eval_set_name": "refunds", "what": "verdicts", "rubric_ref": REF}, "--what verdicts needs --judge NAME"),
        (
            {"eval_set_name": "refunds", "what": "verdicts", "rubric_ref": REF, "judge_name": "gpt"},
            'there is no judge config "gpt"',
        ),
        ({"eval_set_name": "refunds", "what": "everything"}, "--what must be one of"),
    ],
)
def test_an_export_that_cannot_run_says_why(refunds, kwargs, message):
    with pytest.raises(ExportError, match=message.replace("(", "\\(")):
        export_data(workspace=default_workspace(), stream=io.StringIO(), **kwargs)


# -- every export format imports back, and CSV cells cannot run as formulas ---------------------------------

# Values a spreadsheet would run (=, +, -, @, tab, CR first), quotes first, quotes, commas, newlines, non-ASCII.
SPIKY_CASES = [
    {
        "case_id": "=1+1",
        "agent_version": "-v1",
        "input": '=HYPERLINK("http://evil.example", "click")',
        "reference": "'tis the reference",
        "response": '+SUM(A1:A2) refunded, "quoted",\non two lines',
        "tool_calls": [{"name": "@lookup", "args": {"q": "=1"}, "response": {"note": "-2"}}],
        "latency_ms": 0,
        "metadata": {"note": "-x"},
        "output_metadata": {"k": "@y"},
    },
    {
        "case_id": "=1+1",
        "agent_version": "'v2",
        "input": '=HYPERLINK("http://evil.example", "click")',
        "reference": "'tis the reference",
        "response": "\tindented reply",
        "metadata": {"note": "-x"},
    },
    {"case_id": "@case", "input": "\rstarts with a carriage return", "reference": "''two quotes"},
    # Spreadsheets skip whitespace before a formula character: these run too unless quoted.
    {
        "case_id": "spaced",
        "input": " =SUM(A1:A2) after a space",
        "reference": "\n=1 after a newline",
        "response": "  @two spaces, then an at sign",
    },
    {
        "case_id": "spaced-2",
        "input": "\r\n+1 after CR LF",
        "reference": " plain text after a space",
        "response": "\t -1 after a tab and a space",
    },
    {"case_id": "'tis", "agent_version": "default", "input": "Where is my refund? ünïcödé", "response": "''"},
]
LABEL_KEYS = ("case_id", "agent_version", "criterion", "annotator", "outcome", "evidence")
SPIKY_LABELS = [
    *(
        dict(zip(LABEL_KEYS, row, strict=True))
        for row in [
            ("=1+1", "-v1", "correct_amount", "-maria", "PASS", "+SUM(A1:A2)"),
            ("=1+1", "-v1", "correct_amount", "@li", "PASS", "=HYPERLINK"),
            ("=1+1", "-v1", "next_step", "-maria", "FAIL", "NONE"),
            ("=1+1", "-v1", "next_step", "@li", "PASS", "'tis the reference"),
            ("=1+1", "'v2", "within_policy", "-maria", "FAIL", "\tindented"),
            ("=1+1", "'v2", "within_policy", "@li", "FAIL", "\tindented"),
            ("'tis", "default", "correct_amount", "-maria", "ABSTAIN", "ünï"),
        ]
    ),
    {"case_id": "=1+1", "agent_version": "-v1", "criterion": "next_step", "adjudicator": "@rey", "outcome": "FAIL",
     "rationale": "=because\nthe tool said so"},
]  # fmt: skip
SPIKY_VERDICTS = [
    {"case_id": "=1+1", "agent_version": "-v1", "criterion": "correct_amount", "outcome": "PASS",
     "evidence": "+SUM(A1:A2)", "raw": "=cmd|' /C calc'!A0", "latency_ms": 5, "tokens_in": 10, "tokens_out": 2,
     "cache_hit": True},
    {"case_id": "=1+1", "agent_version": "-v1", "criterion": "next_step", "sample": 1, "outcome": "ERROR",
     "evidence": "", "raw": "", "error_reason": "@timeout"},
    {"case_id": "=1+1", "agent_version": "'v2", "criterion": "within_policy", "outcome": "FAIL", "evidence": "'tis",
     "raw": "-1"},
    {"case_id": "'tis", "agent_version": "default", "criterion": "correct_amount", "outcome": "NOT_APPLICABLE",
     "evidence": "NONE", "raw": {"json": ["raw", 1]}},
]  # fmt: skip
ROUND_TRIPS = [
    ("cases", "jsonl"),
    ("cases", "csv"),
    ("cases", "adk"),
    ("labels", "jsonl"),
    ("labels", "csv"),
    ("gold", "jsonl"),
    ("gold", "csv"),
    ("verdicts", "jsonl"),
    ("verdicts", "csv"),
]
SCOPE = {
    "cases": ("--eval-set", "spiky"),
    "labels": ("--eval-set", "spiky", "--rubric", REF),
    "gold": ("--eval-set", "spiky", "--rubric", REF),
    "verdicts": ("--eval-set", "spiky", "--rubric", REF, "--judge", "ext"),
}
IMPORTER = {"cases": "import_cases", "labels": "import_labels", "gold": "import_labels", "verdicts": "import_verdicts"}


def lines_file(tmp_path, name: str, records: list[dict]):
    path = tmp_path / name
    path.write_text("".join(json.dumps(r, ensure_ascii=False) + "\n" for r in records), encoding="utf-8")
    return str(path)


@pytest.fixture
def spiky(tmp_path):
    call_command("import_rubric", str(DATA / "rubric.json"), stdout=io.StringIO())
    for command, name, records in [
        ("import_cases", "cases.jsonl", SPIKY_CASES),
        ("import_labels", "labels.jsonl", SPIKY_LABELS),
        ("import_verdicts", "verdicts.jsonl", SPIKY_VERDICTS),
    ]:
        what = {"import_cases": "cases", "import_labels": "labels", "import_verdicts": "verdicts"}[command]
        call_command(command, *SCOPE[what], lines_file(tmp_path, name, records), stdout=io.StringIO())


def export_file(tmp_path, what: str, fmt: str, name: str):
    path = tmp_path / name
    call_command(
        "export_data", *SCOPE[what], "--what", what, "--format", fmt, "--output", str(path), stderr=io.StringIO()
    )
    return path


def forget(what: str) -> None:
    """Take away what an export of `what` holds, so that its import starts from nothing."""
    if what == "cases":
        EvalSet.objects.filter(name="spiky").delete()
    elif what == "labels":
        Annotation.objects.all().delete()
    elif what == "gold":
        GoldLabel.objects.all().delete()
    else:
        JudgeRun.objects.filter(judge_config__name="ext").delete()


@pytest.mark.parametrize(("what", "fmt"), ROUND_TRIPS)
def test_every_export_imports_into_a_fresh_state_and_exports_the_same_file(spiky, tmp_path, what, fmt):
    name = "export.evalset.json" if fmt == "adk" else f"export.{fmt}"
    first = export_file(tmp_path, what, fmt, name)
    assert first.read_text().count("\n") >= 3  # the scope has data: not an empty round trip
    forget(what)
    out = io.StringIO()
    call_command(IMPORTER[what], *SCOPE[what], str(first), stdout=out)
    second = export_file(tmp_path, what, fmt, "again-" + name)
    assert second.read_bytes() == first.read_bytes()
    counts = (row_counts(), Verdict.objects.count(), JudgeRun.objects.count())
    call_command(IMPORTER[what], *SCOPE[what], str(first), stdout=io.StringIO())  # and again: nothing changes
    assert (row_counts(), Verdict.objects.count(), JudgeRun.objects.count()) == counts


def test_the_round_trips_cover_every_export_offered(spiky):
    for what in WHAT:
        for fmt in FORMATS:
            if (what, fmt) in ROUND_TRIPS:
                continue
            with pytest.raises(ExportError):  # not offered: nothing to round-trip
                export_data(
                    workspace=default_workspace(),
                    eval_set_name="spiky",
                    what=what,
                    fmt=fmt,
                    stream=io.StringIO(),
                    rubric_ref=REF,
                    judge_name="ext",
                )


@pytest.mark.parametrize("what", ["cases", "labels", "gold", "verdicts"])
def test_csv_cells_that_a_spreadsheet_would_run_start_with_a_quote(spiky, tmp_path, what):
    text = export_file(tmp_path, what, "csv", "x.csv").read_bytes().decode()  # read_text() would turn CR into LF
    rows = list(csv.reader(io.StringIO(text, newline="")))
    cells = [cell for row in rows[1:] for cell in row]
    assert cells and not [c for c in cells if c.startswith(FORMULA_STARTS) or c.lstrip()[:1] in ("=", "+", "-", "@")]
    # Worked from the SPIKY_ values: each starts with =, +, -, @, tab, CR, or a quote, and gets one quote more.
    expected = {
        "cases": {
            "'=1+1",
            "'-v1",
            "''v2",
            "'@case",
            "'\rstarts with a carriage return",
            "'''two quotes",
            "'''",
            "''tis",
            "' =SUM(A1:A2) after a space",
            "'\n=1 after a newline",
            "'  @two spaces, then an at sign",
            "'\r\n+1 after CR LF",
            "'\t -1 after a tab and a space",
            " plain text after a space",  # whitespace before anything else: left alone
        },
        "labels": {"'=1+1", "'-maria", "'@li", "'+SUM(A1:A2)", "'=HYPERLINK", "''tis the reference", "'\tindented"},
        "gold": {"'=1+1", "'-v1", "''v2", "'@rey", "'=because\nthe tool said so"},
        "verdicts": {"'=1+1", "'+SUM(A1:A2)", "'=cmd|' /C calc'!A0", "'@timeout", "'-1", "''tis"},
    }[what]
    assert expected <= set(cells)
    assert "-" not in {c[:1] for c in rows[0]}  # the header is the column names, as they are


def test_csv_importers_take_one_quote_off_before_a_formula_character_or_a_quote_only(spiky, tmp_path):
    path = tmp_path / "labels.csv"
    path.write_text(
        "case_id,agent_version,criterion,annotator,outcome,evidence\n"
        "'tis,default,next_step,ann1,PASS,'tis the reference\n"  # a quote before a letter: kept
        "'tis,default,within_policy,ann1,PASS,'=SUM(A1)\n"  # what a spreadsheet shows as =SUM(A1)
        "'tis,default,within_policy,ann2,PASS,''tis\n"
        "'tis,default,correct_amount,ann1,PASS,' =SUM(A1)\n"  # a spreadsheet's text: the quote comes off
        "'tis,default,correct_amount,ann2,PASS,' tis\n"  # a quote before a space and a letter: kept
    )
    call_command("import_labels", *SCOPE["labels"], str(path), stdout=io.StringIO())
    evidence = Label.objects.filter(annotation__annotator__username__in=["ann1", "ann2"]).values_list(
        "evidence", flat=True
    )
    assert sorted(evidence) == sorted(["'tis the reference", "=SUM(A1)", "'tis", " =SUM(A1)", "' tis"])
