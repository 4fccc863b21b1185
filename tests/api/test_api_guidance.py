"""The judge guidance endpoints: read a config's guidance, derive a version, read the gold split (guidance scope)."""

from __future__ import annotations

import jsonschema
import pytest

from judging.gold_splits import start_split
from judging.models import GoldSplit, JudgeConfig
from tests.api_helpers import call, create_token
from tests.factories import make_llm_judge
from tests.guidance_helpers import example, gold_set

pytestmark = pytest.mark.django_db

GOLDS = [{"next_step": "PASS"}] * 3 + [{"next_step": "FAIL"}] * 3


@pytest.fixture
def world(client, lead):
    eval_set, rubric, outputs = gold_set(GOLDS)
    split = start_split(eval_set=eval_set, rubric_version=rubric, by=lead, seed=4)
    gold = {o.pk: g["next_step"] for o, g in zip(outputs, GOLDS, strict=True)}
    dev = next(o for o in outputs if o.pk in split.development)
    held = next(o for o in outputs if o.pk in split.held_out)
    make_llm_judge(name="api-judge")
    token = create_token(client, lead, ["guidance"], rubric)
    return eval_set, rubric, split, gold, dev, held, token


def body(rubric, *examples, judge="api-judge", instructions="A date counts.") -> dict:
    return {
        "judge": judge,
        "rubric": rubric.ref,
        "criteria": {"next_step": {"instructions": instructions, "examples": list(examples)}},
    }


def trimmed(ex: dict) -> dict:
    return {k: ex[k] for k in ("output_id", "input", "response", "outcome", "quote")}


def test_derive_then_read_the_guidance_and_the_split(client, world, lead):
    eval_set, rubric, split, gold, dev, _, token = world
    made = call(client, "POST", "/api/judge-guidance", token, body(rubric, trimmed(example(dev, gold[dev.pk]))))
    assert made.status_code == 201, made.json()
    assert (made.json()["judge"], made.json()["version"], made.json()["derived_from"]) == (
        "api-judge-v2",
        2,
        "api-judge",
    )
    assert JudgeConfig.objects.get(name="api-judge-v2").created_by == lead
    read = call(client, "GET", "/api/judge-guidance", token, judge="api-judge-v2")
    assert read.status_code == 200 and read.json()["criteria"]["next_step"]["examples"][0]["split"] == "development"
    got = call(client, "GET", "/api/gold-split", token, eval_set=eval_set.name, rubric=rubric.ref)
    assert got.status_code == 200
    assert (got.json()["seed"], got.json()["held_out"], got.json()["held_out_looks"]) == (4, split.held_out, 0)
    schema = client.get("/api/openapi.json").json()
    for path, method, status, response in [
        ("/api/judge-guidance", "post", "201", made),
        ("/api/judge-guidance", "get", "200", read),
        ("/api/gold-split", "get", "200", got),
    ]:
        ref = schema["paths"][path][method]["responses"][status]["content"]["application/json"]["schema"]["$ref"]
        published = {**schema["components"]["schemas"][ref.split("/")[-1]], "components": schema["components"]}
        jsonschema.validate(response.json(), published, cls=jsonschema.Draft202012Validator)


def test_bad_bodies_and_held_out_examples_are_refused_and_nothing_is_written(client, world):
    eval_set, rubric, _, gold, dev, held, token = world
    good = trimmed(example(dev, gold[dev.pk]))
    cases = [
        (body(rubric, trimmed(example(held, gold[held.pk]))), 400, "held-out split"),
        (body(rubric, {**good, "quote": "not there"}), 400, "is not in the example's input or response excerpt"),
        (body(rubric, instructions=""), 400, "the guidance is empty"),
        (body(rubric, {**good, "outcome": "MAYBE"}), 400, ""),
        (body(rubric, {**good, "split": "development"}), 400, ""),
        ({**body(rubric), "extra": 1}, 400, ""),
        (body(rubric, judge="nobody"), 404, "nobody"),
    ]
    for sent, status, words in cases:
        answer = call(client, "POST", "/api/judge-guidance", token, sent)
        assert answer.status_code == status, (sent, answer.json())
        assert words in answer.json()["error"] + str(answer.json().get("problems")), answer.json()
    assert JudgeConfig.objects.count() == 1 and GoldSplit.objects.count() == 1


def test_tokens_without_the_scope_or_for_another_rubric_are_refused(client, world, lead):
    eval_set, rubric, _, gold, dev, _, _ = world
    report_only = create_token(client, lead, ["report"], rubric)
    assert call(client, "GET", "/api/judge-guidance", report_only, judge="api-judge").status_code == 403
    other = gold_set([{"next_step": "PASS"}])[1]
    elsewhere = create_token(client, lead, ["guidance"], other)
    sent = body(rubric, trimmed(example(dev, gold[dev.pk])))
    assert call(client, "POST", "/api/judge-guidance", elsewhere, sent).status_code == 403
    assert (
        call(client, "GET", "/api/gold-split", elsewhere, eval_set=eval_set.name, rubric=rubric.ref).status_code == 403
    )
    narrow = create_token(client, lead, ["guidance"], rubric, pattern="rc-*")
    assert call(client, "POST", "/api/judge-guidance", narrow, sent).status_code == 403
    assert JudgeConfig.objects.count() == 1


def test_a_new_guidance_token_shows_its_curl_command(client, lead):
    from django.urls import reverse

    rubric = gold_set([{"next_step": "PASS"}])[1]
    client.force_login(lead)
    data = {"project": "p", "rubric_version": rubric.pk, "eval_set_pattern": "*", "scopes": ["guidance"], "judges": ""}
    page = client.post(reverse("calibration:create_token"), data).content.decode()
    assert "/api/judge-guidance?judge=JUDGE" in page
    assert "/api/calibration-report" not in page  # only the token's own scopes
