"""manage.py judge_guidance: show, derive (JSON or YAML), split start/show, count, held-out looks."""

from __future__ import annotations

import json
from io import StringIO

import pytest
import yaml
from django.core.management import CommandError, call_command

from judging.gold_splits import look_count, start_split
from judging.models import GoldSplit, JudgeConfig
from tests.factories import make_llm_judge
from tests.guidance_helpers import example, gold_set

pytestmark = pytest.mark.django_db

GOLDS = [{"next_step": "PASS"}] * 3 + [{"next_step": "FAIL"}] * 3


def run(*args) -> str:
    out = StringIO()
    call_command("judge_guidance", *args, stdout=out)
    return out.getvalue()


@pytest.fixture
def world(lead):
    eval_set, rubric, outputs = gold_set(GOLDS)
    split = start_split(eval_set=eval_set, rubric_version=rubric, by=lead, seed=4)
    gold = {o.pk: g["next_step"] for o, g in zip(outputs, GOLDS, strict=True)}
    dev = next(o for o in outputs if o.pk in split.development)
    held = next(o for o in outputs if o.pk in split.held_out)
    make_llm_judge(name="cli-judge")
    return eval_set, rubric, split, gold, dev, held


def doc(rubric, *examples, instructions="A date counts.") -> dict:
    return {"rubric": rubric.ref, "criteria": {"next_step": {"instructions": instructions, "examples": list(examples)}}}


def test_derive_from_a_yaml_file_then_show_it(world, lead, tmp_path):
    _, rubric, _, gold, dev, _ = world
    path = tmp_path / "guidance.yaml"
    path.write_text(yaml.safe_dump(doc(rubric, example(dev, gold[dev.pk]))))
    out = run("derive", "cli-judge", "--file", str(path), "--by", lead.username)
    assert "judge config cli-judge-v2 created from cli-judge (version 2" in out and "cli-judge is unchanged" in out
    shown = json.loads(run("show", "cli-judge-v2"))
    assert shown["derived_from"] == "cli-judge" and shown["rubric"] == rubric.ref
    assert shown["criteria"]["next_step"]["examples"][0]["split"] == "development"


def refused(match: str, *args) -> None:
    configs = JudgeConfig.objects.count()
    with pytest.raises(CommandError, match=match):
        run(*args)
    assert JudgeConfig.objects.count() == configs


def test_bad_files_and_held_out_examples_are_refused_with_line_or_path(world, lead, tmp_path):
    _, rubric, _, gold, dev, held = world
    bad_yaml = tmp_path / "bad.yaml"
    bad_yaml.write_text(f"rubric: {rubric.ref}\ncriteria:\n  next_step: [unclosed\n")
    refused(
        r"bad.yaml, line \d+ column \d+: not valid YAML",
        "derive",
        "cli-judge",
        "--file",
        str(bad_yaml),
        "--by",
        lead.username,
    )
    twice = tmp_path / "twice.yaml"
    twice.write_text(f"rubric: {rubric.ref}\nrubric: {rubric.ref}\ncriteria: {{}}\n")
    refused(
        r"twice.yaml, line 2 column 1: .*the key 'rubric' is given twice",
        "derive",
        "cli-judge",
        "--file",
        str(twice),
        "--by",
        lead.username,
    )
    bad_json = tmp_path / "bad.json"
    bad_json.write_text('{"rubric": "x@1",\n "criteria": {"a": 1, "a": 2}}')
    refused(r"bad.json, line 2", "derive", "cli-judge", "--file", str(bad_json), "--by", lead.username)
    from_held = tmp_path / "held.json"
    from_held.write_text(json.dumps(doc(rubric, example(held, gold[held.pk]))))
    refused(
        r"held.json: criteria.next_step.examples\[0\]: output \d+ .* is in the held-out split",
        "derive",
        "cli-judge",
        "--file",
        str(from_held),
        "--by",
        lead.username,
    )
    quote = tmp_path / "quote.json"
    quote.write_text(json.dumps(doc(rubric, {**example(dev, gold[dev.pk]), "quote": "never said"})))
    refused(
        r"examples\[0\].quote: 'never said' is not in the example's",
        "derive",
        "cli-judge",
        "--file",
        str(quote),
        "--by",
        lead.username,
    )
    empty = tmp_path / "empty.json"
    empty.write_text(json.dumps(doc(rubric, instructions="")))
    refused("the guidance is empty", "derive", "cli-judge", "--file", str(empty), "--by", lead.username)
    refused("unknown user", "derive", "cli-judge", "--file", str(empty), "--by", "nobody")


def test_split_show_and_start_and_count_and_held_out_looks(world, lead):
    eval_set, rubric, split, _, _, _ = world
    shown = json.loads(run("split", "show", "--eval-set", eval_set.name, "--rubric", rubric.ref))
    assert shown["seed"] == 4 and sorted(shown["development"] + shown["held_out"]) == sorted(
        split.development + split.held_out
    )
    again = run("split", "start", "--eval-set", eval_set.name, "--rubric", rubric.ref, "--by", lead.username)
    assert "already fixed (seed 4)" in again
    with pytest.raises(CommandError, match="a split never changes"):
        run("split", "start", "--eval-set", eval_set.name, "--rubric", rubric.ref, "--by", lead.username, "--seed", "5")
    assert GoldSplit.objects.count() == 1
    counted = run("count", "--eval-set", eval_set.name, "--rubric", rubric.ref, "--judge", "cli-judge")
    assert counted.startswith("3 model call(s) for 3 item(s) of the development split (0 answered by the cache")
    out = run(
        "held-out", "--eval-set", eval_set.name, "--rubric", rubric.ref, "--judge", "cli-judge", "--by", lead.username
    )
    assert "held out: looked at 1 time (this look included)" in out and "cli-judge\tnext_step\tn 0" in out
    assert look_count(split) == 1
