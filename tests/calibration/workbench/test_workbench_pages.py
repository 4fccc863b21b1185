"""The judge workbench's pages: the guidance editor (suggested examples, diff, save as a new version), a
version's page (call count, re-run on development, promote to held-out), roles, CSRF and bad input."""

from __future__ import annotations

import pytest
from django.test import Client
from django.urls import reverse

from judging.gold_splits import start_split
from judging.models import GoldSplit, HoldoutLook, JudgeConfig, JudgeRun
from tests.factories import (
    add_verdict,
    annotate,
    annotator,
    make_eval_set,
    make_llm_judge,
    make_output,
    make_rubric_version,
    make_run,
)

pytestmark = pytest.mark.django_db

KEY = "correct_amount"
# Per output: gold (both annotators agree), the base judge's verdict. Eight disagreements, four agreements.
PLAN = [("FAIL", "PASS"), ("PASS", "FAIL")] * 4 + [("PASS", "PASS"), ("FAIL", "FAIL")] * 2


@pytest.fixture
def world(lead):
    es, rv = make_eval_set("cal"), make_rubric_version("refund", "1")
    base = make_llm_judge(name="refund-judge")
    amy, bo = annotator("amy"), annotator("bo")
    run = make_run(es, rv, base)
    outputs = []
    for n, (gold, verdict) in enumerate(PLAN):
        output = make_output(es, case_id=f"c{n}", response=f"Case {n}: I have issued a refund of $45.00 today.")
        quote = "a refund of $45.00" if gold == "FAIL" else "issued a refund"
        annotate(output, rv, amy, 1, {KEY: gold, "next_step": "PASS"}, evidence={KEY: quote})
        annotate(output, rv, bo, 2, {KEY: gold, "next_step": "PASS"}, evidence={KEY: quote})
        add_verdict(run, output, KEY, verdict)
        add_verdict(run, output, "next_step", "PASS")
        outputs.append(output)
    return es, rv, base, outputs


def edit_url(base, es, rv, key=KEY) -> str:
    return reverse("calibration:guidance_edit", args=[base.pk, es.pk, rv.pk, key])


def version_url(version, es, rv) -> str:
    return reverse("calibration:workbench_version", args=[version.pk, es.pk, rv.pk])


def posted(action: str, instructions: str = "", examples: list[dict] | None = None) -> dict:
    examples = examples or []
    data = {
        "action": action,
        "instructions": instructions,
        "form-TOTAL_FORMS": str(len(examples)),
        "form-INITIAL_FORMS": str(len(examples)),
        "form-MIN_NUM_FORMS": "0",
        "form-MAX_NUM_FORMS": "8",
    }
    for i, e in enumerate(examples):
        data.update({f"form-{i}-{k}": v for k, v in e.items()})
    return data


def example_of(output, outcome="FAIL", quote="a refund of $45.00", **changes) -> dict:
    return {
        "output_id": output.pk,
        "input": "",
        "response": output.response,
        "outcome": outcome,
        "quote": quote,
    } | changes


@pytest.fixture
def split(world, lead):
    es, rv, *_ = world
    return start_split(eval_set=es, rubric_version=rv, by=lead, seed=4)


def dev_and_held(split, outputs):
    by_id = {o.pk: o for o in outputs}
    return [by_id[i] for i in split.development], [by_id[i] for i in split.held_out]


def test_the_editor_asks_first_to_fix_the_split_and_a_lead_fixes_it(client, world, lead):
    es, rv, base, _ = world
    client.force_login(lead)
    page = client.get(edit_url(base, es, rv)).content.decode()
    assert "First, fix the split" in page and "Suggested examples" not in page
    response = client.post(edit_url(base, es, rv), {"action": "start"})
    assert response.status_code == 302 and GoldSplit.objects.filter(eval_set=es, rubric_version=rv).exists()


def test_suggestions_come_from_development_only_false_passes_first(client, world, split, lead):
    es, rv, base, outputs = world
    dev, held = dev_and_held(split, outputs)
    client.force_login(lead)
    page = client.get(edit_url(base, es, rv)).content.decode()
    offered = [o.pk for o in outputs if f'value="add:{o.pk}"' in page]
    disagreeing_dev = [o for o in dev if PLAN[outputs.index(o)][0] != PLAN[outputs.index(o)][1]]
    assert sorted(offered) == sorted(o.pk for o in disagreeing_dev) and offered
    assert not {o.pk for o in held} & set(offered)
    # False passes (gold FAIL) are listed before false fails.
    positions = [page.index(f'value="add:{o.pk}"') for o in disagreeing_dev]
    false_pass = [p for o, p in zip(disagreeing_dev, positions, strict=True) if PLAN[outputs.index(o)][0] == "FAIL"]
    false_fail = [p for o, p in zip(disagreeing_dev, positions, strict=True) if PLAN[outputs.index(o)][0] == "PASS"]
    assert max(false_pass) < min(false_fail)


def test_using_a_suggestion_puts_it_in_the_form_and_the_diff_and_saving_derives_a_new_version(
    client, world, split, lead
):
    es, rv, base, outputs = world
    dev, _ = dev_and_held(split, outputs)
    chosen = next(o for o in dev if PLAN[outputs.index(o)] == ("FAIL", "PASS"))
    client.force_login(lead)
    page = client.post(edit_url(base, es, rv), posted(f"add:{chosen.pk}", "Check the amount.")).content.decode()
    assert f'name="form-0-output_id" value="{chosen.pk}"' in page
    assert f"+  example 1: output {chosen.pk}, FAIL, quote &#x27;a refund of $45.00&#x27;" in page
    assert JudgeConfig.objects.count() == 1  # nothing saved yet
    response = client.post(edit_url(base, es, rv), posted("save", "Check the amount.", [example_of(chosen)]))
    v2 = JudgeConfig.objects.get(derived_from=base)
    assert response.status_code == 302 and response["Location"] == version_url(v2, es, rv)
    assert v2.guidance[KEY]["instructions"] == "Check the amount."
    assert [e["output_id"] for e in v2.guidance[KEY]["examples"]] == [chosen.pk]
    assert JudgeConfig.objects.get(pk=base.pk).guidance == {}  # the base never changes


@pytest.mark.parametrize(
    "case",
    ["quote not in excerpt", "example from held out", "empty guidance", "missing response", "wrong outcome"],
)
def test_bad_input_gets_a_clear_error_and_nothing_is_written(client, world, split, lead, case):
    es, rv, base, outputs = world
    dev, held = dev_and_held(split, outputs)
    fail_dev = next(o for o in dev if PLAN[outputs.index(o)][0] == "FAIL")
    fail_held = next(o for o in held if PLAN[outputs.index(o)][0] == "FAIL")
    data, expected = {
        "quote not in excerpt": (posted("save", "", [example_of(fail_dev, quote="$40.00")]), "is not in the example"),
        "example from held out": (posted("save", "", [example_of(fail_held)]), "is in the held-out split"),
        "empty guidance": (posted("save", "  "), "the guidance is empty"),
        "missing response": (posted("save", "", [example_of(fail_dev, response="")]), "fix the fields marked"),
        "wrong outcome": (posted("save", "", [example_of(fail_dev, outcome="PASS")]), "an example teaches the people"),
    }[case]
    client.force_login(lead)
    response = client.post(edit_url(base, es, rv), data)
    assert response.status_code == 422
    assert expected in response.content.decode()
    assert JudgeConfig.objects.count() == 1 and GoldSplit.objects.count() == 1


def test_the_editor_and_its_posts_are_for_leads_only_and_need_csrf(client, world, split, reviewer, annotator, lead):
    es, rv, base, outputs = world
    for person in (reviewer, annotator):
        client.force_login(person)
        assert client.get(edit_url(base, es, rv)).status_code == 403
        assert client.post(edit_url(base, es, rv), posted("save", "Check the amount.")).status_code == 403
    strict = Client(enforce_csrf_checks=True)
    strict.force_login(lead)
    assert strict.post(edit_url(base, es, rv), posted("save", "Check the amount.")).status_code == 403
    assert JudgeConfig.objects.count() == 1
    # Negative control: the same post with the lead's session and token saves.
    client.force_login(lead)
    assert client.post(edit_url(base, es, rv), posted("save", "Check the amount.")).status_code == 302


@pytest.fixture
def v2(client, world, split, lead):
    es, rv, base, outputs = world
    client.force_login(lead)
    client.post(edit_url(base, es, rv), posted("save", "Check the amount."))
    return JudgeConfig.objects.get(derived_from=base)


def test_the_version_page_counts_the_calls_of_a_re_run_before_it_starts(client, world, split, v2, judge_key):
    es, rv, base, outputs = world
    page = client.get(version_url(v2, es, rv)).content.decode()
    # One call per development output (per-output mode, one sample, nothing cached for the new version).
    assert (
        f"{len(split.development)} development outputs: <strong>{len(split.development)} model calls</strong>" in page
    )
    assert "+  instructions: Check the amount." in page
    response = client.post(reverse("calibration:workbench_run", args=[v2.pk, es.pk, rv.pk, "development"]))
    run = JudgeRun.objects.get(judge_config=v2)
    assert response.status_code == 302 and response["Location"] == version_url(v2, es, rv)
    page = client.get(version_url(v2, es, rv)).content.decode()
    assert reverse("judging:run_progress", args=[run.pk]) in page  # its progress panel follows it here
    assert run.split_part == "development" and not HoldoutLook.objects.exists()


def test_promoting_runs_on_held_out_and_counts_one_look(client, world, split, v2, judge_key):
    es, rv, base, outputs = world
    client.post(reverse("calibration:workbench_run", args=[v2.pk, es.pk, rv.pk, "held_out"]))
    run = JudgeRun.objects.get(judge_config=v2)
    assert run.split_part == "held_out"
    look = HoldoutLook.objects.get()
    assert [c["name"] for c in look.configs] == [v2.name]
    assert "held out: looked at 1 time" in client.get(version_url(v2, es, rv)).content.decode()


def test_a_run_that_cannot_start_is_refused_with_no_look_counted(client, world, split, v2):
    es, rv, base, outputs = world  # no judge_key: the API key is missing
    response = client.post(reverse("calibration:workbench_run", args=[v2.pk, es.pk, rv.pk, "held_out"]))
    assert response.status_code == 422 and b"Not started" in response.content
    assert not HoldoutLook.objects.exists() and not JudgeRun.objects.filter(judge_config=v2).exists()
    bad = client.post(reverse("calibration:workbench_run", args=[v2.pk, es.pk, rv.pk, "everything"]))
    assert bad.status_code == 422


def test_reviewers_read_the_version_page_but_cannot_run(client, world, split, v2, reviewer, annotator):
    es, rv, *_ = world
    client.force_login(reviewer)
    page = client.get(version_url(v2, es, rv))
    assert page.status_code == 200 and b"Re-run on development (" not in page.content
    assert client.post(reverse("calibration:workbench_run", args=[v2.pk, es.pk, rv.pk, "held_out"])).status_code == 403
    client.force_login(annotator)
    assert client.get(version_url(v2, es, rv)).status_code == 403
    assert not HoldoutLook.objects.exists()


def test_the_report_of_a_model_judge_links_leads_to_its_workbench(client, world, lead, reviewer):
    es, rv, base, _ = world
    report = reverse("calibration:report", args=[es.pk, rv.pk, base.pk])
    client.force_login(lead)
    assert version_url(base, es, rv) in client.get(report).content.decode()
    client.force_login(reviewer)
    assert version_url(base, es, rv) not in client.get(report).content.decode()
    # Negative control: an imported judge has no prompt to improve.
    imported = make_llm_judge(name="imported", backend="imported")
    client.force_login(lead)
    page = client.get(reverse("calibration:report", args=[es.pk, rv.pk, imported.pk])).content.decode()
    assert "Improve this judge" not in page


def test_the_editor_and_the_version_page_run_a_bounded_number_of_queries(
    client, world, split, v2, lead, django_assert_max_num_queries
):
    es, rv, base, outputs = world
    client.force_login(lead)
    with django_assert_max_num_queries(30):
        assert client.get(edit_url(base, es, rv)).status_code == 200
    with django_assert_max_num_queries(30):
        assert client.get(version_url(v2, es, rv)).status_code == 200


def test_transcript_text_in_suggestions_is_shown_as_text_never_as_markup(client, world, split, lead):
    es, rv, base, outputs = world
    dev, _ = dev_and_held(split, outputs)
    target = next(o for o in dev if PLAN[outputs.index(o)] == ("FAIL", "PASS"))
    target.response = "<script>alert(1)</script> I have issued a refund of $45.00 today."
    target.save()
    client.force_login(lead)
    page = client.get(edit_url(base, es, rv)).content.decode()
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in page
    assert "<script>alert(1)</script>" not in page


def test_the_report_of_an_instrument_judge_links_leads_to_its_workbench_too(client, world, lead):
    # Instruments take examples as precedents (docs/judging.md, "Precedent matching"), so they can be improved.
    es, rv, _, _ = world
    rules = make_llm_judge(
        name="rules", backend="instrument", instruments={"x": {"kind": "max_length", "max_words": 9}}
    )
    client.force_login(lead)
    page = client.get(reverse("calibration:report", args=[es.pk, rv.pk, rules.pk])).content.decode()
    assert version_url(rules, es, rv) in page


def test_the_editor_offers_instructions_only_to_a_judge_that_reads_them(client, world, split, lead):
    # An instrument reads no text (a saved instruction would be refused); a model judge's editor has the field.
    es, rv, base, _ = world
    rules = make_llm_judge(
        name="rules", backend="instrument", instruments={"x": {"kind": "max_length", "max_words": 9}}
    )
    client.force_login(lead)
    instrument_page = client.get(edit_url(rules, es, rv)).content.decode()
    assert 'name="instructions"' not in instrument_page
    assert "reads no instructions" in instrument_page
    model_page = client.get(edit_url(base, es, rv)).content.decode()
    assert 'name="instructions"' in model_page
    assert "reads no instructions" not in model_page
