"""Judge configs are fixed instruments once used; the read side picks the latest run and the sample majority."""

from __future__ import annotations

import pytest

from calibration.data import frame_reading as calibration_reading
from calibration.data import frames
from judging import current_verdicts as reading
from judging.models import JudgeConfig, JudgeConfigLocked, JudgeRun, Verdict
from judging.sample_majority import majority
from labeling import label_frames
from tests.factories import default_workspace, make_eval_set, make_output, make_rubric_version


@pytest.mark.django_db
def test_an_unused_config_may_change_and_its_hash_follows():
    config = JudgeConfig.objects.create(name="j", backend="openai", model_id="m-2026-01", workspace=default_workspace())
    first = config.content_hash
    config.model_id = "m-2026-02"
    config.save()
    assert config.content_hash != first and config.content_hash == config.compute_hash()
    config.max_concurrency = 9  # how fast, not what is asked: same instrument, same hash
    config.save()
    assert config.content_hash == JudgeConfig(backend="openai", model_id="m-2026-02").compute_hash()


@pytest.mark.django_db
def test_a_used_config_cannot_change_in_any_field():
    config = JudgeConfig.objects.create(name="j", backend="openai", model_id="m-2026-01", workspace=default_workspace())
    JudgeRun.objects.create(eval_set=make_eval_set(), rubric_version=make_rubric_version(), judge_config=config)
    for field, value in (("model_id", "m-2026-02"), ("temperature", 0.5), ("name", "renamed"), ("samples", 3)):
        fresh = JudgeConfig.objects.get(pk=config.pk)
        setattr(fresh, field, value)
        with pytest.raises(JudgeConfigLocked, match="is in use and cannot change"):
            fresh.save()
    config.refresh_from_db()
    assert (config.name, config.model_id, config.temperature, config.samples) == ("j", "m-2026-01", 0.0, 1)
    config.save()  # saving it unchanged is fine


def test_the_majority_of_samples_with_its_share():
    assert majority(["PASS", "PASS", "FAIL"]) == ("PASS", 2 / 3, False)
    assert majority(["FAIL"]) == ("FAIL", 1.0, False)
    assert majority(["ERROR", "ERROR", "PASS"]) == ("ERROR", 2 / 3, False)
    assert majority(["ABSTAIN", "ABSTAIN", "PASS"]) == ("ABSTAIN", 2 / 3, False)  # the judge's own ABSTAIN: no tie
    # A tie reads as ABSTAIN: two samples that disagree do not make a verdict.
    assert majority(["PASS", "FAIL"]) == ("ABSTAIN", 0.5, True)
    assert majority(["PASS", "FAIL", "NOT_APPLICABLE", "NOT_APPLICABLE", "PASS"]) == ("ABSTAIN", 0.4, True)
    with pytest.raises(ValueError):
        majority([])


# Stored samples of a 3-sample judge over two runs, worked by hand. Each sample counts from the newest
# run that has it; then the majority of the three, a tie is ABSTAIN:
#   (output, criterion): older run's samples 0, 1, 2 | newer run's      -> current samples   -> verdict
#   o1 correct_amount:   PASS  PASS  FAIL            | sample 2 PASS    -> PASS PASS PASS    -> PASS, 3/3
#   o1 next_step:        PASS  FAIL  FAIL            | sample 1 N/A     -> PASS N/A FAIL     -> ABSTAIN (tie), 1/3
#   o2 correct_amount:   ERROR ERROR PASS            | -                -> ERROR ERROR PASS  -> ERROR, 2/3
#   o2 next_step:        -     -     PASS            | 0, 1 FAIL FAIL   -> FAIL FAIL PASS    -> FAIL, 2/3
# A quote not found (x) in a sample that gave the verdict flags it; in a tie no sample gave it.
STORED = {
    ("o1", "correct_amount"): (["PASS", "PASS", "FAIL"], {2: "PASS"}),
    ("o1", "next_step"): (["PASS", "FAIL", "FAIL"], {1: "NOT_APPLICABLE"}),
    ("o2", "correct_amount"): (["ERROR", "ERROR", "PASS"], {}),
    ("o2", "next_step"): ([None, None, "PASS"], {0: "FAIL", 1: "FAIL"}),
}
NOT_FOUND = {("o1", "next_step", "newer", 1), ("o2", "next_step", "newer", 0), ("o1", "correct_amount", "older", 2)}
EXPECTED = {
    ("o1", "correct_amount"): ("PASS", 1.0, False),  # the not-found sample 2 of the older run no longer counts
    ("o1", "next_step"): ("ABSTAIN", 1 / 3, False),  # a tie: the not-found N/A sample did not give the verdict
    ("o2", "correct_amount"): ("ERROR", 2 / 3, False),
    ("o2", "next_step"): ("FAIL", 2 / 3, True),
}


@pytest.mark.django_db
def test_the_judge_pages_and_calibration_read_the_same_current_verdict_from_stored_samples():
    eval_set, rv = make_eval_set(), make_rubric_version()
    judge = JudgeConfig.objects.create(
        name="j", backend="openai", model_id="m", samples=3, workspace=eval_set.workspace
    )
    outputs = {name: make_output(eval_set, case_id=name) for name in ("o1", "o2")}
    criteria = {c.key: c for c in rv.criteria.all()}
    runs = {
        age: JudgeRun.objects.create(eval_set=eval_set, rubric_version=rv, judge_config=judge)
        for age in ("older", "newer")
    }
    for (output, key), (older, newer) in STORED.items():
        for age, samples in (("older", dict(enumerate(older))), ("newer", newer)):
            for sample, outcome in samples.items():
                if outcome is not None:
                    Verdict.objects.create(
                        run=runs[age],
                        output=outputs[output],
                        rubric_version=rv,
                        criterion=criteria[key],
                        judge_config=judge,
                        judge_config_hash=judge.content_hash,
                        sample=sample,
                        outcome=outcome,
                        evidence_found=(output, key, age, sample) not in NOT_FOUND,
                    )
    output_name, criterion_key = {o.pk: n for n, o in outputs.items()}, {c.pk: k for k, c in criteria.items()}

    # The judging side: the current verdict rows, then the majority of each item's samples.
    current = reading.current_verdicts(eval_set=eval_set, rubric_version=rv, judge_config=judge)
    samples: dict[tuple[str, str], list[str]] = {}
    for output_id, criterion_id, outcome in current.values_list("output_id", "criterion_id", "outcome"):
        samples.setdefault((output_name[output_id], criterion_key[criterion_id]), []).append(outcome)
    assert {item: majority(outcomes)[:2] for item, outcomes in samples.items()} == {
        item: expected[:2] for item, expected in EXPECTED.items()
    }
    # The calibration side, from its frames.
    frame = calibration_reading.current_verdicts(frames.load_verdicts(label_frames.Scope(eval_set, rv), judge))
    read = {
        (output_name[row.output], criterion_key[row.criterion]): (
            row.judge,
            row.judge_agreement,
            bool(row.evidence_not_found),
        )
        for row in frame.itertuples()
    }
    assert read == EXPECTED


@pytest.mark.django_db
def test_the_admin_shows_a_used_config_read_only(admin_client):
    config = JudgeConfig.objects.create(name="j", backend="openai", model_id="m-2026-01", workspace=default_workspace())
    url = f"/admin/judging/judgeconfig/{config.pk}/change/"
    assert 'name="model_id"' in admin_client.get(url).content.decode()
    JudgeRun.objects.create(eval_set=make_eval_set(), rubric_version=make_rubric_version(), judge_config=config)
    page = admin_client.get(url).content.decode()
    assert 'name="model_id"' not in page and "m-2026-01" in page


def test_one_sample_per_item_reads_the_newest_runs_answer_as_it_is():
    # Worked by hand: item (1, 10) was judged by two runs (run_rank is the negated run id, so the lowest is
    # the newest run: -2 here), the rest once; with one
    # sample each, the verdict is that sample's outcome (ERROR stays ERROR) with share 1, and a quote not
    # found flags it.
    import pandas as pd

    frame = pd.DataFrame(
        {
            "output": [10, 10, 11, 12],
            "criterion": [1, 1, 1, 1],
            "sample": [0, 0, 0, 0],
            "outcome": ["FAIL", "PASS", "ERROR", "PASS"],
            "evidence_found": [True, False, None, False],
            "run_rank": [-1, -2, -2, -2],
        }
    )
    got = calibration_reading.current_verdicts(frame).sort_values("output").to_dict("records")
    assert got == [
        {"criterion": 1, "output": 10, "judge": "PASS", "judge_agreement": 1.0, "evidence_not_found": True},
        {"criterion": 1, "output": 11, "judge": "ERROR", "judge_agreement": 1.0, "evidence_not_found": False},
        {"criterion": 1, "output": 12, "judge": "PASS", "judge_agreement": 1.0, "evidence_not_found": True},
    ]
