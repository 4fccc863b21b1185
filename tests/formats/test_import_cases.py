"""import_cases: JSONL, CSV and ADK files into an eval set, all or nothing, idempotent, on both write paths."""

from __future__ import annotations

import json

import pytest
from django.core.management import CommandError, call_command
from django.db import connection

from evals.models import Case, EvalSet, Output
from evals.problems import MAX_PROBLEMS, ImportFailed
from formats.adk import evalset_document
from formats.case_import import import_cases
from tests.factories import default_workspace
from tests.io_helpers import DATA, data_source, dump_cases, jsonl, row_counts, source

pytestmark = pytest.mark.django_db


@pytest.fixture(params=[True, False], ids=["copy", "bulk"])
def fast_path(request):
    """Every behaviour holds on the PostgreSQL COPY path and on the portable bulk_create path."""
    if request.param and connection.vendor != "postgresql":
        pytest.skip("the COPY path needs PostgreSQL")
    return request.param


def run(src, fast_path, eval_set="refunds", **kwargs):
    return import_cases(
        workspace=default_workspace(), source=src, eval_set_name=eval_set, fast_path=fast_path, **kwargs
    )


def test_it_imports_a_jsonl_file_one_output_a_line(fast_path):
    report = run(data_source("cases.jsonl"), fast_path)
    assert report.counts == {
        "records": 5,
        "repeated_lines": 0,
        "cases_created": 3,
        "cases_unchanged": 0,
        "outputs_created": 5,
        "outputs_unchanged": 0,
    }
    case = Case.objects.get(case_id="r-001")
    assert case.input == "I was charged twice for order 1234. Can I get a refund?"
    assert case.reference == "Refund $40.00 for the duplicate charge; arrives in 5 business days."
    assert case.metadata == {"category": "duplicate_charge"}
    v1 = case.outputs.get(agent_version="v1")
    assert v1.response == "I have issued a refund of $40.00. You will see it within 5 business days."
    assert v1.tool_calls == [
        {"name": "lookup_order", "args": {"order_id": "1234"}, "response": {"duplicate_charge": 40.0}}
    ]
    assert v1.latency_ms == 1840
    assert Output.objects.get(case__case_id="r-002", agent_version="v2").latency_ms is None
    assert sorted(Output.objects.values_list("case__case_id", "agent_version")) == [
        ("r-001", "v1"),
        ("r-001", "v2"),
        ("r-002", "v1"),
        ("r-002", "v2"),
        ("r-003", "v1"),
    ]
    assert 'eval set "refunds" (new): 3 cases created, 0 already there; 5 outputs created' in report.summary


def test_csv_and_jsonl_of_the_same_data_import_the_same(fast_path):
    run(data_source("cases.jsonl"), fast_path, eval_set="from-jsonl")
    run(data_source("cases.csv"), fast_path, eval_set="from-csv")
    assert dump_cases("from-csv") == dump_cases("from-jsonl")


def test_importing_the_same_file_twice_changes_nothing(fast_path):
    run(data_source("cases.jsonl"), fast_path)
    ids = sorted(Output.objects.values_list("pk", flat=True))
    before = row_counts()
    report = run(data_source("cases.jsonl"), fast_path)
    assert row_counts() == before
    assert sorted(Output.objects.values_list("pk", flat=True)) == ids
    assert report.counts["cases_unchanged"] == 3 and report.counts["outputs_unchanged"] == 5
    assert not report.changed


def test_a_new_agent_version_adds_outputs_to_existing_cases(fast_path):
    run(data_source("cases.jsonl"), fast_path)
    line = json.loads((DATA / "cases.jsonl").read_text().splitlines()[0])
    report = run(source("v3.jsonl", jsonl({**line, "agent_version": "v3", "response": "Done."})), fast_path)
    assert report.counts["cases_unchanged"] == 1 and report.counts["outputs_created"] == 1
    assert Output.objects.filter(case__case_id="r-001").count() == 3


def test_a_changed_output_is_refused_and_the_whole_file_writes_nothing(fast_path):
    run(data_source("cases.jsonl"), fast_path)
    lines = (DATA / "cases.jsonl").read_text().splitlines()
    changed = json.loads(lines[1])
    changed["response"] = "Refund of $40.00 issued."
    new_case = {"case_id": "r-999", "input": "Hello?", "response": "Hi."}
    before = row_counts()
    with pytest.raises(ImportFailed) as exc:
        run(source("again.jsonl", jsonl(new_case, changed)), fast_path)
    assert str(exc.value).splitlines()[0] == (
        'again.jsonl, line 2, field "response": the output of case "r-001" for agent_version "v2" is already '
        "imported with a different response; an output cannot change once imported (labels refer to it): "
        "import it under a new agent_version"
    )
    assert row_counts() == before
    assert not Case.objects.filter(case_id="r-999").exists()


def test_a_changed_case_is_refused_naming_the_fields_that_differ(fast_path):
    run(data_source("cases.jsonl"), fast_path)
    record = {"case_id": "r-003", "input": "Can I return shoes after 90 days?", "reference": "No.", "response": "No."}
    with pytest.raises(ImportFailed) as exc:
        run(source("c.jsonl", jsonl(record)), fast_path)
    assert exc.value.messages == [
        'c.jsonl, line 1, field "input": case "r-003" is already in eval set "refunds" with a different input, '
        "reference, metadata; a case cannot change once imported (labels refer to it): give the changed case a "
        "new case_id or import it into a new eval set"
    ]


def test_lines_of_one_case_must_agree_and_repeated_lines_are_skipped(fast_path):
    a = {"case_id": "c1", "input": "Q", "response": "A", "agent_version": "v1"}
    b = {"case_id": "c1", "input": "Q", "response": "B", "agent_version": "v2"}
    report = run(source("ok.jsonl", jsonl(a, b, a)), fast_path)
    assert report.counts["repeated_lines"] == 1 and report.counts["outputs_created"] == 2
    assert "1 repeated line skipped" in str(report)
    clash = {"case_id": "c2", "input": "Q", "response": "A"}
    with pytest.raises(ImportFailed) as exc:
        run(
            source(
                "clash.jsonl", jsonl(clash, {**clash, "input": "Q2", "agent_version": "x"}, {**clash, "response": "Z"})
            ),
            fast_path,
        )
    assert exc.value.messages == [
        'clash.jsonl, line 2, field "input": case "c2" has a different input than on line 1; every line of a case '
        "must repeat the same input, reference and metadata",
        'clash.jsonl, line 3, field "response": the output of case "c2" for agent_version "default" differs from '
        "line 1 (response); give one of them another agent_version",
    ]


def test_agent_version_defaults_and_can_be_given_for_the_whole_file(fast_path):
    run(source("a.jsonl", jsonl({"case_id": "c1", "input": "Q", "response": "A"})), fast_path)
    run(
        source("b.jsonl", jsonl({"case_id": "c1", "input": "Q", "response": "B"})),
        fast_path,
        default_agent_version="v7",
    )
    assert sorted(Output.objects.values_list("agent_version", "response")) == [("default", "A"), ("v7", "B")]


def test_a_record_without_a_response_defines_only_the_case(fast_path):
    report = run(source("c.jsonl", jsonl({"case_id": "c1", "input": "Q", "reference": "R"})), fast_path)
    assert report.counts["cases_created"] == 1 and report.counts["outputs_created"] == 0
    with pytest.raises(ImportFailed, match='field "response": is missing \\(the record has latency_ms of an output\\)'):
        run(source("d.jsonl", jsonl({"case_id": "c2", "input": "Q", "latency_ms": 5})), fast_path)


def test_long_integers_keep_every_digit(fast_path):
    line = '{"case_id": "c1", "input": "Q", "response": "A", "metadata": {"order": 123456789012345678901234567890}}\n'
    run(source("big.jsonl", line), fast_path)
    assert Case.objects.get().metadata == {"order": 123456789012345678901234567890}
    assert not run(source("big.jsonl", line), fast_path).changed


def test_values_are_normalized_the_same_way_on_both_paths(fast_path):
    record = {
        "case_id": 17,
        "input": "Q",
        "response": "",
        "latency_ms": 12.6,
        "tool_calls": [{"name": "t"}],
        "output_metadata": {"run": "n1"},
    }
    run(source("n.jsonl", jsonl(record)), fast_path)
    output = Output.objects.get()
    assert output.case.case_id == "17"
    assert output.response == ""
    assert output.latency_ms == 13
    assert output.tool_calls == [{"name": "t", "args": {}, "response": None}]
    assert output.metadata == {"run": "n1"}


GOOD = {"case_id": "c1", "input": "Q", "response": "A"}
BAD_FILES = [
    (
        "bad.jsonl",
        '{"case_id": "c1", "input": "Q", "response": "A"}\n{"case_id": "c2", "input": \n',
        "bad.jsonl, line 2: not valid JSON",
    ),
    ("bad.jsonl", jsonl({"input": "Q", "response": "A"}), 'bad.jsonl, line 1, field "case_id": is missing'),
    ("bad.jsonl", jsonl({"case_id": "c1", "input": "  ", "response": "A"}), 'line 1, field "input": is empty'),
    (
        "bad.jsonl",
        jsonl({"case_id": " c1", "input": "Q", "response": "A"}),
        'field "case_id": must not start or end with spaces',
    ),
    (
        "bad.jsonl",
        jsonl({**GOOD, "latency_ms": "fast"}),
        'field "latency_ms": must be a number of milliseconds, not text',
    ),
    ("bad.jsonl", jsonl({**GOOD, "latency_ms": -3}), 'field "latency_ms": must be between 0 and 2147483647, not -3'),
    (
        "bad.jsonl",
        jsonl({**GOOD, "tool_calls": {"name": "x"}}),
        'field "tool_calls": must be a JSON list, not an object',
    ),
    (
        "bad.jsonl",
        jsonl({**GOOD, "tool_calls": [{"args": {}}]}),
        'field "tool_calls[0].name": must be the tool\'s name',
    ),
    (
        "bad.jsonl",
        jsonl({**GOOD, "tool_calls": [{"name": "x", "result": 1}]}),
        'field "tool_calls[0].result": unknown field',
    ),
    ("bad.jsonl", jsonl({**GOOD, "refrence": "R"}), 'field "refrence": unknown field (did you mean "reference"?)'),
    ("bad.jsonl", jsonl({**GOOD, "metadata": [1]}), 'field "metadata": must be a JSON object, not a list'),
    ("bad.jsonl", jsonl({**GOOD, "response": "A\u0000B"}), 'field "response": contains a NUL character'),
    ("bad.jsonl", jsonl({**GOOD, "metadata": {"k": "\u0000"}}), 'field "metadata": contains a NUL character'),
    (
        "bad.jsonl",
        '{"case_id": "c1", "input": "Q", "response": "A", "latency_ms": NaN}\n',
        "bad.jsonl, line 1: not valid JSON (",
    ),
    (
        "bad.jsonl",
        '{"case_id": "c1", "input": "Q", "response": "\\ud800"}\n',
        "line 1: not valid JSON (no low surrogate",
    ),
    (
        "bad.jsonl",
        '{"case_id": "c1", "input": "Q", "response": "A", "latency_ms": 1e400}\n',
        "line 1: not valid JSON (",
    ),
    (
        "bad.csv",
        'case_id,input,response,metadata\nc1,Q,A,"{""x"": 1e400}"\n',
        'field "metadata": is not valid JSON (1e400 is too large',
    ),
    ("bad.jsonl", "[1, 2]\n", "bad.jsonl, line 1: expected one JSON object a line, found a list"),
    ("bad.jsonl", jsonl(GOOD) + '"just text"\n', "bad.jsonl, line 2: expected a JSON object, found text"),
    ("bad.jsonl", jsonl({**GOOD, "case_id": "x" * 301}), 'field "case_id": is longer than 300 characters'),
    (
        "bad.jsonl",
        b'{"case_id": "c1", "input": "caf\xe9", "response": "A"}\n',
        "bad.jsonl, line 1: not UTF-8 text (byte 0xe9 at column 32)",
    ),
    (
        "bad.jsonl",
        "\ufeff".encode("utf-16-le") + jsonl(GOOD).encode("utf-16-le"),
        "bad.jsonl, line 1: the file is UTF-16 text",
    ),
    ("empty.jsonl", "", "empty.jsonl: the file has no records"),
    ("blank.jsonl", "\n\n  \n", "blank.jsonl: the file has no records"),
    ("header.csv", "case_id,input,response\n", "header.csv: the file has no records"),
    ("bad.csv", "case_id,input,response\nc1,Q\n", "bad.csv, line 2: expected 3 cells like the header, found 2"),
    (
        "bad.csv",
        "case_id,inputs,response\nc1,Q,A\n",
        'bad.csv, line 1, field "inputs": unknown column (did you mean "input"?)',
    ),
    ("bad.csv", "case_id,response\nc1,A\n", 'bad.csv, line 1, field "input": the header has no such column'),
    ("bad.csv", "case_id;input;response\nc1;Q;A\n", "bad.csv, line 1: the header is separated by semicolons"),
    ("bad.csv", 'case_id,input,response\nc1,"Q,A\n', "bad.csv, line 2: not valid CSV"),
    (
        "bad.csv",
        "case_id,input,response,tool_calls\nc1,Q,A,[{]\n",
        'bad.csv, line 2, field "tool_calls": is not valid JSON',
    ),
    (
        "bad.csv",
        "case_id,input,response,latency_ms\nc1,Q,A,1.5s\n",
        'field "latency_ms": must be a number of milliseconds',
    ),
    (
        "rubric.json",
        (DATA / "rubric.json").read_text(),
        "rubric.json, line 1: this looks like a rubric (it has criteria); import it with import_rubric",
    ),
    ("rubric.yaml", (DATA / "rubric.yaml").read_text(), "rubric.yaml: this is a YAML file"),
    ("labels.jsonl", (DATA / "labels.jsonl").read_text(), "labels.jsonl, line 1: this looks like a labels file"),
    ("labels.csv", (DATA / "labels.csv").read_text(), "labels.csv, line 1: this looks like a labels file"),
    ("ls.json", (DATA / "labelstudio.json").read_text(), "ls.json, line 1: this looks like a Label Studio export"),
]


@pytest.mark.parametrize(("name", "content", "expected"), BAD_FILES)
def test_a_bad_file_is_refused_with_file_line_and_field_and_writes_nothing(fast_path, name, content, expected):
    run(source("seed.jsonl", jsonl({"case_id": "seed", "input": "Q", "response": "A"})), fast_path)
    before = row_counts()
    with pytest.raises(ImportFailed) as exc:
        run(source(name, content), fast_path)
    assert expected in str(exc.value)
    assert str(exc.value).endswith("Nothing was imported.")
    assert row_counts() == before


def test_good_lines_before_and_after_a_bad_one_are_not_written_either(fast_path):
    lines = [{"case_id": f"c{i}", "input": "Q", "response": "A"} for i in range(1200)]
    lines[1100]["latency_ms"] = "slow"
    before = row_counts()
    with pytest.raises(ImportFailed, match="line 1101"):
        run(source("big.jsonl", jsonl(*lines)), fast_path)
    assert row_counts() == before
    assert not EvalSet.objects.filter(name="refunds").exists()


def test_problems_are_collected_up_to_a_limit(fast_path):
    lines = [{"case_id": f"c{i}", "input": "Q", "response": "A", "latency_ms": "x" if i % 2 else 1} for i in range(60)]
    with pytest.raises(ImportFailed) as exc:
        run(source("many.jsonl", jsonl(*lines)), fast_path)
    assert len(exc.value.problems) == MAX_PROBLEMS
    assert [p.line for p in exc.value.problems[:3]] == [2, 4, 6]
    assert f"(stopped after {MAX_PROBLEMS} problems; there may be more)" in str(exc.value)


def test_both_paths_give_the_same_data_and_the_same_messages():
    if connection.vendor != "postgresql":
        pytest.skip("the COPY path needs PostgreSQL")
    for fast, name in ((True, "copy"), (False, "bulk")):
        import_cases(
            workspace=default_workspace(), source=data_source("cases.jsonl"), eval_set_name=name, fast_path=fast
        )
        import_cases(
            workspace=default_workspace(),
            source=data_source("refunds.evalset_result.json"),
            eval_set_name=name,
            fast_path=fast,
        )
    assert dump_cases("copy") == dump_cases("bulk")
    lines = (DATA / "cases.jsonl").read_text().splitlines()
    broken = [json.loads(lines[0]), {**json.loads(lines[1]), "tool_calls": []}, {**json.loads(lines[2]), "input": "X"}]
    broken.append({"case_id": "new", "input": "Q", "response": "A", "latency_ms": True})
    messages = {}
    for fast, name in ((True, "copy"), (False, "bulk")):
        with pytest.raises(ImportFailed) as exc:
            import_cases(
                workspace=default_workspace(),
                source=source("b.jsonl", jsonl(*broken)),
                eval_set_name=name,
                fast_path=fast,
            )
        messages[name] = [m.replace(f'"{name}"', '"SET"') for m in exc.value.messages]
    assert messages["copy"] == messages["bulk"]
    assert len(messages["copy"]) == 3


# --- Google ADK files ---------------------------------------------------------------------------------------


def test_an_adk_evalset_gives_one_case_per_invocation_with_the_expected_turn_as_reference(fast_path):
    report = run(data_source("refunds.evalset.json"), fast_path)
    assert report.counts["cases_created"] == 3 and report.counts["outputs_created"] == 0
    cases = {c.case_id: c for c in Case.objects.all()}
    assert sorted(cases) == ["double_charge", "lost_parcel#e-2a", "lost_parcel#e-2b"]
    second = cases["lost_parcel#e-2b"]
    assert second.input == "Yes please."
    assert second.reference == "Done: $25.50 is refunded to your card within 5 business days."
    assert second.metadata == {
        "adk": {
            "eval_set_id": "refunds",
            "eval_id": "lost_parcel",
            "turn": 2,
            "invocation_id": "e-2b",
            "expected_tool_uses": [{"name": "issue_refund", "args": {"amount": 25.5}}],
        }
    }


def test_camel_case_and_snake_case_adk_files_import_the_same(fast_path):
    run(data_source("refunds.evalset.json"), fast_path, eval_set="snake")
    run(data_source("refunds_camel.evalset.json"), fast_path, eval_set="camel")
    assert dump_cases("snake") == dump_cases("camel")


def test_an_adk_result_file_gives_the_actual_invocations_as_outputs(fast_path):
    report = run(data_source("refunds.evalset_result.json"), fast_path, default_agent_version="adk-run-1")
    assert report.counts["cases_created"] == 3 and report.counts["outputs_created"] == 3
    first = Output.objects.get(case__case_id="double_charge")
    assert first.agent_version == "adk-run-1"
    assert first.response == "Refund of $45.00 issued."  # the thought part is not the answer
    assert first.tool_calls == [
        {"name": "lookup_order", "args": {"order_id": "1234"}, "response": {"duplicate_charge": 40.0}}
    ]
    assert first.latency_ms == 920  # duration 0.9204 s
    assert first.metadata == {
        "adk": {"eval_set_result_id": "refund_agent_refunds_1750000100.0", "invocation_id": "e-7c1"}
    }
    assert first.case.reference == "I have refunded the duplicate charge of $40.00; it arrives within 5 business days."
    events = Output.objects.get(case__case_id="lost_parcel#e-2a")  # InvocationEvents form of intermediate_data
    assert events.tool_calls == [
        {"name": "lookup_order", "args": {"order_id": "5678"}, "response": {"total": 25.5, "status": "lost"}}
    ]
    assert events.latency_ms == 1500
    last = Output.objects.get(case__case_id="lost_parcel#e-2b")
    assert last.tool_calls == [{"name": "issue_refund", "args": {"amount": 25.5}, "response": {"ok": True}}]
    assert last.latency_ms is None


def test_a_result_file_matches_the_cases_of_its_evalset_in_either_order(fast_path):
    run(data_source("refunds.evalset.json"), fast_path, eval_set="a")
    report = run(data_source("refunds.evalset_result.json"), fast_path, eval_set="a")
    assert report.counts["cases_unchanged"] == 3 and report.counts["outputs_created"] == 3
    run(data_source("refunds_plain.evalset_result.json"), fast_path, eval_set="b")
    report = run(data_source("refunds.evalset.json"), fast_path, eval_set="b")
    assert report.counts["cases_unchanged"] == 3
    assert dump_cases("a") == dump_cases("b")
    again = run(data_source("refunds_plain.evalset_result.json"), fast_path, eval_set="a")
    assert not again.changed


def test_cases_exported_to_adk_and_run_there_match_their_results(fast_path):
    """Our cases -> ADK eval set -> an ADK run (which may drop unknown keys) -> outputs on our cases."""
    run(data_source("cases.jsonl"), fast_path)
    doc = evalset_document(EvalSet.objects.get(name="refunds"))
    results = []
    for eval_case in doc["eval_cases"]:
        expected = {k: v for k, v in eval_case["conversation"][0].items() if k != "icewater"}
        actual = {
            "invocation_id": "x",
            "user_content": expected["user_content"],
            "final_response": {"parts": [{"text": "ok"}]},
        }
        results.append(
            {
                "eval_id": eval_case["eval_id"],
                "eval_metric_result_per_invocation": [{"actual_invocation": actual, "expected_invocation": expected}],
            }
        )
    result = {"eval_set_result_id": "r1", "eval_set_id": doc["eval_set_id"], "eval_case_results": results}
    report = run(source("run.evalset_result.json", json.dumps(result)), fast_path, default_agent_version="adk")
    assert report.counts["cases_unchanged"] == 3 and report.counts["cases_created"] == 0
    assert report.counts["outputs_created"] == 3


BAD_ADK = [
    (
        "x.evalset.json",
        {"eval_set_id": "s", "eval_cases": [{"eval_id": "e1", "conversation_scenario": {"starting_prompt": "hi"}}]},
        'x.evalset.json, line 4, field "eval_cases[0].conversation_scenario": this eval case has a user-simulator '
        "scenario",
    ),
    (
        "x.evalset.json",
        {"eval_set_id": "s", "eval_cases": [{"conversation": []}]},
        'field "eval_cases[0].eval_id": is missing',
    ),
    (
        "x.evalset.json",
        {"eval_set_id": "s", "eval_cases": [{"eval_id": "e1", "conversation": []}]},
        "must be a non-empty list",
    ),
    (
        "x.evalset.json",
        {"eval_set_id": "s", "eval_cases": [{"eval_id": "e1", "conversation": [{"user_content": {"parts": []}}]}]},
        'field "eval_cases[0].conversation[0].user_content": the user\'s turn has no text',
    ),
    ("x.evalset.json", {"eval_set_id": "s", "eval_cases": "none"}, 'field "eval_cases": must be a list'),
    (
        "x.evalset_result.json",
        {
            "eval_set_result_id": "r",
            "eval_set_id": "s",
            "eval_case_results": [{"eval_id": "e1", "eval_metric_result_per_invocation": []}],
        },
        "has no invocations, so there is no output to import",
    ),
    (
        "x.evalset_result.json",
        {
            "eval_set_result_id": "r",
            "eval_case_results": [
                {"eval_id": "e1", "eval_metric_result_per_invocation": [{"expected_invocation": {}}]}
            ],
        },
        'field "eval_case_results[0].eval_metric_result_per_invocation[0].actual_invocation": is missing',
    ),
    ("x.json", {"something": "else"}, "x.json, line 1: not a cases file"),
]


@pytest.mark.parametrize(("name", "doc", "expected"), BAD_ADK)
def test_a_bad_adk_file_is_refused_with_where_and_writes_nothing(fast_path, name, doc, expected):
    before = row_counts()
    with pytest.raises(ImportFailed) as exc:
        run(source(name, json.dumps(doc, indent=1)), fast_path)
    assert expected in str(exc.value)
    assert row_counts() == before


def test_the_command_reports_counts_and_fails_with_the_messages(capsys):
    call_command("import_cases", "--eval-set", "cli", str(DATA / "cases.csv"))
    assert "3 cases created" in capsys.readouterr().out
    with pytest.raises(CommandError, match="rubric.json, line 1: this looks like a rubric"):
        call_command("import_cases", "--eval-set", "cli", str(DATA / "rubric.json"))
    with pytest.raises(CommandError, match="no such file"):
        call_command("import_cases", "--eval-set", "cli", str(DATA / "missing.jsonl"))
    call_command("import_cases", "--eval-set", "cli2", "--no-fast-path", str(DATA / "cases.jsonl"))
    assert dump_cases("cli") == dump_cases("cli2")


def test_a_failure_while_batches_are_in_flight_writes_nothing(fast_path, monkeypatch):
    from formats import case_writers as casewriters

    monkeypatch.setattr(casewriters, "COPY_BATCH", 50)
    monkeypatch.setattr(casewriters, "BULK_BATCH", 50)
    run(source("seed.jsonl", jsonl({"case_id": "seed", "input": "Q", "response": "A"})), fast_path)
    lines = [{"case_id": f"c{i}", "input": "Q", "response": "A"} for i in range(500)]
    lines[430]["tool_calls"] = "none"
    before = row_counts()
    with pytest.raises(ImportFailed, match='line 431, field "tool_calls"'):
        run(source("late.jsonl", jsonl(*lines)), fast_path)
    assert row_counts() == before
    fresh = [{"case_id": f"c{i}", "input": "Q", "response": "A"} for i in range(500)]
    fresh[499]["latency_ms"] = -1
    with pytest.raises(ImportFailed, match="line 500"):
        run(source("fresh.jsonl", jsonl(*fresh)), fast_path, eval_set="fresh")
    assert row_counts() == before


def test_conflicts_found_batch_by_batch_stop_at_the_limit(fast_path, monkeypatch):
    from formats import case_writers as casewriters

    monkeypatch.setattr(casewriters, "COPY_BATCH", 10)
    monkeypatch.setattr(casewriters, "BULK_BATCH", 10)
    lines = [{"case_id": f"c{i:02d}", "input": "Q", "response": "A"} for i in range(60)]
    run(source("a.jsonl", jsonl(*lines)), fast_path)
    before = row_counts()
    with pytest.raises(ImportFailed) as exc:
        run(source("b.jsonl", jsonl(*({**r, "response": "B"} for r in lines))), fast_path)
    assert [p.line for p in exc.value.problems] == list(range(1, MAX_PROBLEMS + 1))
    assert exc.value.truncated
    assert row_counts() == before


def test_an_excel_style_csv_keeps_line_numbers_across_multi_line_cells(fast_path):
    content = '\ufeffcase_id,input,response,latency_ms\r\nc1,"one\r\ntwo",A,5\r\nc2,Q,A,x\r\n'
    with pytest.raises(ImportFailed) as exc:
        run(source("excel.csv", content), fast_path)
    assert exc.value.messages == ["excel.csv, line 4, field \"latency_ms\": must be a number of milliseconds, not 'x'"]
    run(source("excel.csv", content.replace(",x\r\n", ",7\r\n")), fast_path)
    assert Case.objects.get(case_id="c1").input == "one\r\ntwo"
    assert Output.objects.get(case__case_id="c2").latency_ms == 7
