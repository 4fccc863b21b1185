"""import_labels: labels and gold from JSONL, CSV and Label Studio; slots, accounts, conflicts, nothing half-written."""

from __future__ import annotations

import json
import re

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.core.management import CommandError, call_command
from django.urls import reverse
from django.utils import timezone

from evals.models import Membership, Role, RubricVersion, User
from evals.problems import ImportFailed
from formats.case_import import import_cases
from formats.label_import import import_labels, strict_majority
from formats.rubric_import import import_rubric
from labeling.models import Annotation, GoldLabel, Label
from tests.factories import default_workspace, make_user
from tests.io_helpers import DATA, data_source, dump_gold, dump_labels, jsonl, row_counts, source
from tests.login_helpers import password_login

pytestmark = pytest.mark.django_db
REF = "refund-support@1"


@pytest.fixture
def refunds():
    import_rubric(workspace=default_workspace(), source=data_source("rubric.json"))
    import_cases(workspace=default_workspace(), source=data_source("cases.jsonl"), eval_set_name="refunds")


def run(src, **kwargs):
    return import_labels(workspace=default_workspace(), source=src, eval_set_name="refunds", rubric_ref=REF, **kwargs)


def slots(case_id: str, agent_version: str) -> list[tuple[int, str]]:
    return sorted(
        Annotation.objects.filter(output__case__case_id=case_id, output__agent_version=agent_version).values_list(
            "slot", "annotator__username"
        )
    )


def test_it_imports_labels_as_submitted_annotations_one_per_annotator_and_output(refunds):
    report = run(data_source("labels.jsonl"))
    # Worked from tests/data/labels.jsonl: 9 annotator lines over 7 (output, annotator) pairs, 1 adjudicator line.
    assert report.counts["labels_created"] == 9
    assert report.counts["annotations_created"] == 7
    assert report.counts["gold_created"] == 1
    assert set(Annotation.objects.values_list("status", "source")) == {("submitted", "import")}
    assert all(a.submitted_at for a in Annotation.objects.all())
    label = Label.objects.get(annotation__annotator__username="li", criterion__key="next_step")
    assert (label.outcome, label.evidence, label.revision, label.is_current) == ("FAIL", "NONE", 1, True)
    gold = GoldLabel.objects.get()
    assert (gold.outcome, gold.decided_by.username, gold.rationale, gold.source) == (
        "FAIL",
        "sam",
        "A voucher is beyond the refund policy.",
        "import",
    )


def test_slots_follow_the_order_annotators_first_appear_for_each_output(refunds):
    run(data_source("labels.jsonl"))
    assert slots("r-001", "v1") == [(1, "maria"), (2, "li")]
    assert slots("r-001", "v2") == [(1, "li"), (2, "maria")]  # li's line comes first for v2


def test_slots_come_after_annotations_already_made_in_the_app(refunds, annotator):
    from evals.models import Output

    output = Output.objects.get(case__case_id="r-001", agent_version="v1")
    Annotation.objects.create(output=output, rubric_version=_rv(), annotator=annotator, slot=1, status="submitted")
    run(data_source("labels.jsonl"))
    assert slots("r-001", "v1") == [(1, "ann"), (2, "maria"), (3, "li")]


def _rv():
    return RubricVersion.objects.by_ref(REF, default_workspace())


def test_unknown_people_become_accounts_that_cannot_log_in(refunds, client):
    report = run(data_source("labels.jsonl"))
    users = {u.username: u for u in User.objects.filter(username__in=["maria", "li", "sam"])}
    assert sorted(users) == ["li", "maria", "sam"]
    assert all(not u.is_active and not u.has_usable_password() for u in users.values())
    here = default_workspace()  # where the eval set is, so where the new accounts are members
    # role_in() says None while an account is inactive: the memberships the import made are read directly.
    roles = dict(Membership.objects.filter(workspace=here).values_list("user__username", "role"))
    assert roles["maria"] == Role.ANNOTATOR and roles["sam"] == Role.REVIEWER
    assert (
        "cannot log in until a lead activates them (add_user NAME --workspace default --role ...): li, maria, sam"
        in str(report)
    )
    assert not password_login(client, "maria", "")


def test_existing_accounts_are_used_as_they_are(refunds):
    maria = make_user("maria", Role.ANNOTATOR)
    sam = make_user("sam", Role.LEAD)  # sam only adjudicates in the file: a lead may
    run(data_source("labels.jsonl"))
    maria.refresh_from_db()
    assert maria.is_active and maria.role_in(default_workspace()) == Role.ANNOTATOR
    assert Annotation.objects.filter(annotator=maria).count() == 4
    assert GoldLabel.objects.get().decided_by == sam


@pytest.mark.parametrize(("role", "superuser"), [(Role.LEAD, False), (Role.REVIEWER, False), (Role.ANNOTATOR, True)])
def test_labels_for_an_existing_reviewer_lead_or_superuser_are_refused_with_line_and_field(refunds, role, superuser):
    maria = make_user("maria", role)
    maria.is_superuser = superuser
    maria.save()
    before = row_counts()
    with pytest.raises(ImportFailed) as failed:
        run(data_source("labels.jsonl"))
    (message,) = failed.value.messages  # once for the person, at their first label line
    assert 'line 1, field "annotator"' in message
    assert '"maria" is a' in message and "only annotators give labels" in message
    assert row_counts() == before  # nothing half-written, not even the new accounts


def test_importing_the_same_file_twice_changes_nothing_and_csv_equals_jsonl(refunds):
    run(data_source("labels.jsonl"))
    labels, gold, before = dump_labels("refunds"), dump_gold("refunds"), row_counts()
    for name in ("labels.jsonl", "labels.csv"):
        report = run(data_source(name))
        assert report.counts["labels_unchanged"] == 9 and report.counts["gold_unchanged"] == 1
        assert not report.changed
    assert (dump_labels("refunds"), dump_gold("refunds"), row_counts()) == (labels, gold, before)


def test_more_criteria_for_an_imported_annotation_are_added_to_it(refunds):
    first = {
        "case_id": "r-003",
        "agent_version": "v1",
        "criterion": "within_policy",
        "annotator": "zoe",
        "outcome": "PASS",
    }
    run(source("a.jsonl", jsonl(first)))
    report = run(source("b.jsonl", jsonl(first, {**first, "criterion": "next_step", "outcome": "FAIL"})))
    assert report.counts == {**report.counts, "labels_created": 1, "labels_unchanged": 1, "annotations_created": 0}
    assert Annotation.objects.get().labels.count() == 2


def test_the_evidence_is_kept_as_given_and_quotes_not_in_the_transcript_are_counted(refunds):
    report = run(data_source("labels.jsonl"))
    # Only li's "the customer was happy" on r-002 v1 is not in that output's transcript ("NONE" counts as quoted).
    assert "1 evidence quote not found verbatim" in str(report)
    assert Label.objects.filter(evidence="the customer was happy").exists()


def test_agreement_gold_lines_are_checked_against_the_labels_and_not_stored(refunds):
    run(data_source("labels.jsonl"))
    agree = {"case_id": "r-001", "agent_version": "v2", "criterion": "correct_amount", "adjudicator": "agreement"}
    report = run(source("g.jsonl", jsonl({**agree, "outcome": "FAIL", "rationale": "2 of 2 annotators"})))
    assert report.counts["agreement_confirmed"] == 1 and GoldLabel.objects.count() == 1
    before = row_counts()
    with pytest.raises(ImportFailed) as exc:
        run(
            source(
                "g.jsonl",
                jsonl(
                    {**agree, "outcome": "PASS"},
                    {**agree, "case_id": "r-001", "agent_version": "v1", "criterion": "next_step", "outcome": "PASS"},
                ),
            )
        )
    assert exc.value.messages == [
        'g.jsonl, line 1, field "outcome": gold by agreement says PASS for case "r-001" (v2), criterion '
        '"correct_amount", but the labels (FAIL, FAIL) agree on FAIL; agreement gold is derived from labels, so '
        "import the labels first (or give an adjudicator)",
        'g.jsonl, line 2, field "outcome": gold by agreement says PASS for case "r-001" (v1), criterion '
        '"next_step", but the labels (FAIL, PASS) have no majority; agreement gold is derived from labels, so '
        "import the labels first (or give an adjudicator)",
    ]
    assert row_counts() == before


def test_a_different_label_for_the_same_annotator_item_and_criterion_is_refused(refunds):
    run(data_source("labels.jsonl"))
    changed = {
        "case_id": "r-001",
        "agent_version": "v1",
        "criterion": "next_step",
        "annotator": "li",
        "outcome": "PASS",
        "evidence": "NONE",
    }
    before = row_counts()
    with pytest.raises(ImportFailed) as exc:
        run(source("fix.jsonl", jsonl(changed)))
    assert exc.value.messages == [
        'fix.jsonl, line 1, field "outcome": li already labeled case "r-001" (v1), criterion "next_step" as FAIL; '
        "a label is not overwritten by an import (correct it in the app, where the change is kept as a revision)"
    ]
    with pytest.raises(ImportFailed, match="as FAIL with different evidence"):
        run(source("fix.jsonl", jsonl({**changed, "outcome": "FAIL", "evidence": "Refund processed"})))
    assert row_counts() == before


def test_a_different_gold_label_does_not_replace_an_adjudication(refunds):
    run(data_source("labels.jsonl"))
    gold = {"case_id": "r-002", "agent_version": "v1", "criterion": "within_policy", "adjudicator": "sam"}
    with pytest.raises(ImportFailed, match="already has gold FAIL decided by sam; an import does not replace"):
        run(source("g.jsonl", jsonl({**gold, "outcome": "PASS"})))
    with pytest.raises(
        ImportFailed, match='field "adjudicator": case "r-002" \\(v1\\), criterion "within_policy" already'
    ):
        run(
            source(
                "g.jsonl",
                jsonl(
                    {
                        **gold,
                        "adjudicator": "kim",
                        "outcome": "FAIL",
                        "rationale": "A voucher is beyond the refund policy.",
                    }
                ),
            )
        )


def test_imported_gold_follows_older_revisions_that_are_no_longer_current(refunds, reviewer):
    from evals.models import Output

    output = Output.objects.get(case__case_id="r-003", agent_version="v1")
    criterion = _rv().criteria.get(key="within_policy")
    for revision in (1, 2):
        GoldLabel.objects.create(
            output=output,
            rubric_version=_rv(),
            criterion=criterion,
            outcome="PASS",
            decided_by=reviewer,
            revision=revision,
            is_current=False,
        )
    line = {"case_id": "r-003", "agent_version": "v1", "criterion": "within_policy", "adjudicator": "sam"}
    run(source("g.jsonl", jsonl({**line, "outcome": "FAIL"})))
    assert GoldLabel.objects.get(is_current=True).revision == 3


def test_labels_are_not_merged_into_an_annotation_made_in_the_app(refunds, annotator):
    from evals.models import Output

    output = Output.objects.get(case__case_id="r-003", agent_version="v1")
    Annotation.objects.create(
        output=output, rubric_version=_rv(), annotator=annotator, slot=1, reserved_until=timezone.now()
    )
    line = {"case_id": "r-003", "agent_version": "v1", "criterion": "next_step", "annotator": "ann", "outcome": "PASS"}
    with pytest.raises(ImportFailed, match='ann has a draft annotation made in the app for case "r-003"'):
        run(source("l.jsonl", jsonl(line)))


def test_duplicate_lines_in_a_file_are_skipped_when_identical_and_refused_when_not(refunds):
    line = {"case_id": "r-003", "agent_version": "v1", "criterion": "next_step", "annotator": "zoe", "outcome": "PASS"}
    report = run(source("d.jsonl", jsonl(line, line)))
    assert report.counts["repeated_lines"] == 1 and report.counts["labels_created"] == 1
    before = row_counts()
    with pytest.raises(ImportFailed) as exc:
        run(source("d.jsonl", jsonl({**line, "annotator": "kai"}, {**line, "annotator": "kai", "outcome": "FAIL"})))
    assert exc.value.messages == [
        'd.jsonl, line 2, field "outcome": a different kai\'s label for case "r-003" (v1), criterion "next_step" '
        "than on line 1"
    ]
    assert row_counts() == before


L = {"case_id": "r-001", "agent_version": "v1", "criterion": "next_step", "annotator": "zoe", "outcome": "PASS"}
BAD_LABELS = [
    (
        "b.jsonl",
        jsonl({**L, "criterion": "next_stpe"}),
        'b.jsonl, line 1, field "criterion": "next_stpe" is not a criterion of this rubric version '
        '(did you mean "next_step"?)',
    ),
    (
        "b.jsonl",
        jsonl({**L, "outcome": "pass"}),
        'field "outcome": "pass" is not one of PASS, FAIL, NOT_APPLICABLE, ABSTAIN (write it as "PASS")',
    ),
    ("b.jsonl", jsonl({**L, "outcome": "N/A"}), '(write it as "NOT_APPLICABLE")'),
    ("b.jsonl", jsonl({**L, "outcome": "ERROR"}), '"ERROR" is not one of PASS, FAIL, NOT_APPLICABLE, ABSTAIN'),
    ("b.jsonl", jsonl({k: v for k, v in L.items() if k != "outcome"}), 'field "outcome": is missing'),
    (
        "b.jsonl",
        jsonl({**L, "adjudicator": "sam"}),
        'field "adjudicator": a line has an annotator (a label) or an adjudicator',
    ),
    (
        "b.jsonl",
        jsonl({k: v for k, v in L.items() if k != "annotator"}),
        'field "annotator": is missing (or give an adjudicator',
    ),
    ("b.jsonl", jsonl({**L, "annotator": "zoe smith"}), 'field "annotator": "zoe smith" is not a valid account name'),
    ("b.jsonl", jsonl({**L, "rationale": "why"}), 'field "rationale": a label has evidence, not a rationale'),
    (
        "b.jsonl",
        jsonl({**{k: v for k, v in L.items() if k != "annotator"}, "adjudicator": "sam", "evidence": "x"}),
        'field "evidence": a gold line has a rationale, not evidence',
    ),
    (
        "b.jsonl",
        jsonl({**L, "case_id": "r-404"}),
        'b.jsonl, line 1, field "case_id": eval set "refunds" has no case "r-404"; import the cases first',
    ),
    (
        "b.jsonl",
        jsonl({**L, "agent_version": "v9"}),
        'field "agent_version": case "r-001" has no output for agent_version "v9" (it has: v1, v2)',
    ),
    ("b.jsonl", jsonl({**L, "score": 1}), 'field "score": unknown field'),
    ("b.jsonl", jsonl(L) + "{oops\n", "b.jsonl, line 2: not valid JSON"),
    ("b.jsonl", "", "b.jsonl: the file is empty"),
    ("b.jsonl", b'{"case_id": "r-001", "criterion": "next_step", "annotator": "Jos\xe9"}\n', "line 1: not UTF-8 text"),
    (
        "b.csv",
        "case_id,criterion,outcome\nr-001,next_step,PASS\n",
        'b.csv, line 1, field "annotator": the header needs an annotator or adjudicator column',
    ),
    (
        "b.csv",
        "case_id,agent_version,criterion,annotator,outcome,evidnce\n",
        'field "evidnce": unknown column (did you mean "evidence"?)',
    ),
    (
        "b.csv",
        "case_id,agent_version,criterion,annotator,adjudicator,outcome\nr-001,v1,next_step,,,PASS\n",
        'b.csv, line 2, field "annotator": is missing',
    ),
    ("cases.jsonl", (DATA / "cases.jsonl").read_text(), "cases.jsonl, line 1: this looks like a cases file"),
    ("cases.csv", (DATA / "cases.csv").read_text(), "cases.csv, line 1: this looks like a cases file"),
    ("rubric.json", (DATA / "rubric.json").read_text(), "rubric.json, line 1: this looks like a rubric"),
    (
        "r.evalset.json",
        (DATA / "refunds.evalset.json").read_text(),
        "r.evalset.json: this is an ADK eval file; import it with import_cases",
    ),
    (
        "ls.json",
        json.dumps(
            [
                {
                    "data": {"case_id": "r-001"},
                    "annotations": [
                        {
                            "completed_by": 1,
                            "result": [
                                {"from_name": "next_step", "type": "choices", "value": {"choices": ["PASS", "FAIL"]}}
                            ],
                        }
                    ],
                }
            ],
            indent=1,
        ),
        'field "tasks[0].annotations[0].result[0].value.choices": must hold exactly one choice',
    ),
    (
        "ls.json",
        json.dumps(
            [
                {
                    "data": {"case_id": "r-001"},
                    "annotations": [
                        {
                            "completed_by": 1,
                            "result": [{"from_name": "tone", "type": "choices", "value": {"choices": ["PASS"]}}],
                        }
                    ],
                }
            ],
            indent=1,
        ),
        'field "tasks[0].annotations[0].result[0].from_name": "tone" is not a criterion',
    ),
    (
        "ls.json",
        json.dumps(
            [
                {
                    "data": {"text": "hi"},
                    "annotations": [
                        {
                            "completed_by": 1,
                            "result": [{"from_name": "next_step", "type": "choices", "value": {"choices": ["PASS"]}}],
                        }
                    ],
                }
            ],
            indent=1,
        ),
        'field "tasks[0].data.case_id": is missing',
    ),
    (
        "ls.json",
        json.dumps([{"data": {"case_id": "r-001"}, "annotations": [{"result": []}]}], indent=1),
        'field "tasks[0].annotations[0].completed_by": is missing',
    ),
    ("ls.json", "[]", "ls.json, line 1: the export has no tasks"),
]


@pytest.mark.parametrize(("name", "content", "expected"), BAD_LABELS)
def test_a_bad_labels_file_is_refused_with_file_line_and_field_and_writes_nothing(refunds, name, content, expected):
    run(data_source("labels.jsonl"))
    before = row_counts()
    with pytest.raises(ImportFailed) as exc:
        run(source(name, content))
    assert expected in str(exc.value)
    assert row_counts() == before


def test_a_file_with_many_problems_reports_each_with_its_line(refunds):
    lines = [{**L, "annotator": f"p{i}", "outcome": "MAYBE" if i % 3 == 0 else "PASS"} for i in range(9)]
    before = row_counts()
    with pytest.raises(ImportFailed) as exc:
        run(source("m.jsonl", jsonl(*lines)))
    assert [p.line for p in exc.value.problems] == [1, 4, 7]
    assert row_counts() == before
    assert not User.objects.filter(username__startswith="p").exists()


def test_unknown_eval_set_or_rubric_version_is_refused_before_reading(refunds):
    with pytest.raises(ImportFailed, match='there is no eval set "nope"; import its cases first'):
        import_labels(
            workspace=default_workspace(), source=data_source("labels.jsonl"), eval_set_name="nope", rubric_ref=REF
        )
    unknown_version = """field "rubric": rubric 'refund-support' has no version '2' (known: 1)"""
    with pytest.raises(ImportFailed, match=re.escape(unknown_version)):
        import_labels(
            workspace=default_workspace(),
            source=data_source("labels.jsonl"),
            eval_set_name="refunds",
            rubric_ref="refund-support@2",
        )
    with pytest.raises(CommandError, match="NAME@VERSION"):
        call_command("import_labels", "--eval-set", "refunds", "--rubric", "refund-support", str(DATA / "labels.jsonl"))


def test_a_label_studio_export_imports_people_labels_evidence_and_ground_truth(refunds):
    report = run(data_source("labelstudio.json"))
    rows = dump_labels("refunds")
    assert [(r[0], r[1], r[2], r[3], r[6], r[7], r[8]) for r in rows] == [
        ("r-001", "v1", "labelstudio-4", 2, "correct_amount", "PASS", ""),
        ("r-001", "v1", "labelstudio-4", 2, "next_step", "FAIL", ""),
        ("r-001", "v1", "maria@example.com", 1, "correct_amount", "PASS", "refund of $40.00"),
        ("r-001", "v1", "maria@example.com", 1, "next_step", "PASS", ""),
    ]
    # The cancelled annotation (completed_by 5) and the model's prediction are not labels.
    assert not User.objects.filter(username="labelstudio-5").exists()
    assert dump_gold("refunds") == [
        (
            "r-002",
            "v1",
            "within_policy",
            "FAIL",
            "sam@example.com",
            "A voucher is beyond the refund policy.",
            "import",
            1,
            True,
        )
    ]
    assert report.counts["accounts_created"] == 3
    again = run(data_source("labelstudio.json"))
    assert not again.changed


MAJORITY_CASES = [
    (["PASS", "PASS"], "PASS"),
    (["PASS", "FAIL"], None),
    (["PASS", "FAIL", "PASS"], "PASS"),
    (["PASS", "FAIL", "ABSTAIN"], None),
    (["PASS", "PASS", "NOT_APPLICABLE"], "PASS"),
    (["FAIL"], None),  # one label is no majority: blind double labeling promises a second opinion
    ([], None),
]


@pytest.mark.parametrize(("votes", "gold"), MAJORITY_CASES)
def test_agreement_lines_are_checked_by_the_rule_calibration_reads_gold_by(votes, gold):
    import pandas as pd

    from labeling.gold import derive_gold

    assert strict_majority(votes) == gold
    labels = pd.DataFrame({"criterion": [1] * len(votes), "output": [7] * len(votes), "outcome": votes})
    derived = derive_gold(labels, pd.DataFrame({"criterion": [], "output": [], "outcome": []}))
    assert (derived["gold"].iloc[0] if len(derived) else None) == gold


# -- evidence and rationale are no longer than the labeling and adjudication forms take ----------------------


def test_evidence_and_rationale_longer_than_the_forms_take_are_refused_with_line_and_field(refunds, tmp_path):
    from labeling.forms import EVIDENCE_MAX_CHARS, RATIONALE_MAX_CHARS

    gold = {k: v for k, v in L.items() if k != "annotator"}
    path = tmp_path / "long.jsonl"
    path.write_text(
        jsonl(
            {**L, "evidence": "x" * EVIDENCE_MAX_CHARS},  # exactly the limit: fine
            {**L, "annotator": "li", "evidence": "y" * (EVIDENCE_MAX_CHARS + 1)},
            {**gold, "adjudicator": "sam", "rationale": "z" * (RATIONALE_MAX_CHARS + 1)},
        )
    )
    before = row_counts()
    with pytest.raises(CommandError) as failure:
        call_command("import_labels", "--eval-set", "refunds", "--rubric", REF, str(path))
    text = str(failure.value)
    assert f'long.jsonl, line 2, field "evidence": is {EVIDENCE_MAX_CHARS + 1:,} characters long' in text
    assert f"at most {EVIDENCE_MAX_CHARS:,} (as in the app)" in text
    assert f'long.jsonl, line 3, field "rationale": is {RATIONALE_MAX_CHARS + 1:,} characters long' in text
    assert "line 1" not in text and row_counts() == before


def test_the_evidence_limit_holds_for_csv_label_studio_and_the_upload_page(refunds, client, lead):
    from labeling.forms import EVIDENCE_MAX_CHARS

    long = "q" * (EVIDENCE_MAX_CHARS + 1)
    csv_text = f"case_id,agent_version,criterion,annotator,outcome,evidence\nr-001,v1,next_step,zoe,PASS,{long}\n"
    studio = json.dumps(
        [
            {
                "data": {"case_id": "r-001", "agent_version": "v1"},
                "annotations": [
                    {
                        "completed_by": 4,
                        "result": [
                            {"from_name": "next_step", "type": "choices", "value": {"choices": ["PASS"]}},
                            {"from_name": "next_step_evidence", "type": "textarea", "value": {"text": [long]}},
                        ],
                    }
                ],
            }
        ],
        indent=1,
    )
    before = row_counts()
    for name, content, where in [
        ("long.csv", csv_text, 'long.csv, line 2, field "evidence"'),
        ("long.json", studio, 'long.json, line 11, field "tasks[0].annotations[0].result[0].evidence"'),
    ]:
        with pytest.raises(
            ImportFailed, match=f"{where}: is {EVIDENCE_MAX_CHARS + 1:,} characters long".replace("[", "\\[")
        ):
            run(source(name, content))
    client.force_login(lead)
    data = {
        "kind": "labels",
        "labels-eval_set": "refunds",
        "labels-rubric": RubricVersion.objects.by_ref(REF, default_workspace()).pk,
        "labels-agent_version": "v1",
        "labels-file": SimpleUploadedFile("long.csv", csv_text.encode()),
    }
    page = client.post(reverse("formats:upload"), data).content.decode().replace("&quot;", '"')
    assert f'long.csv, line 2, field "evidence": is {EVIDENCE_MAX_CHARS + 1:,} characters long' in page
    assert row_counts() == before


@pytest.mark.parametrize("wrong", [0, [], {}, False])
def test_an_agent_version_of_the_wrong_type_is_refused_not_read_as_the_default(refunds, wrong):
    first = json.loads((DATA / "labels.jsonl").read_text().splitlines()[0])
    with pytest.raises(ImportFailed) as failed:
        run(source("l.jsonl", jsonl({**first, "agent_version": wrong})))
    assert any('line 1, field "agent_version"' in m for m in failed.value.messages), failed.value.messages
    assert not Label.objects.exists()
    # Negative control: "" still means "the default agent version", as documented.
    run(source("l.jsonl", jsonl({**first, "agent_version": ""})), default_agent_version=first["agent_version"])
    assert Label.objects.exists()
