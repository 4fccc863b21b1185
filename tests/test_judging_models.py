"""Judge configs are fixed instruments once used; the read side picks the latest run and the sample majority."""

from __future__ import annotations

import pytest

from judging.models import JudgeConfig, JudgeConfigLocked, JudgeRun
from judging.reading import majority
from tests.factories import make_eval_set, make_rubric_version


@pytest.mark.django_db
def test_an_unused_config_may_change_and_its_hash_follows():
    config = JudgeConfig.objects.create(name="j", backend="openai", model_id="m-2026-01")
    first = config.content_hash
    config.model_id = "m-2026-02"
    config.save()
    assert config.content_hash != first and config.content_hash == config.compute_hash()
    config.max_concurrency = 9  # how fast, not what is asked: same instrument, same hash
    config.save()
    assert config.content_hash == JudgeConfig(backend="openai", model_id="m-2026-02").compute_hash()


@pytest.mark.django_db
def test_a_used_config_cannot_change_in_any_field():
    config = JudgeConfig.objects.create(name="j", backend="openai", model_id="m-2026-01")
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
    assert majority(["PASS", "PASS", "FAIL"]) == ("PASS", 2 / 3)
    assert majority(["FAIL"]) == ("FAIL", 1.0)
    assert majority(["ERROR", "ERROR", "PASS"]) == ("ERROR", 2 / 3)
    # A tie reads as ABSTAIN: two samples that disagree do not make a verdict.
    assert majority(["PASS", "FAIL"]) == ("ABSTAIN", 0.5)
    assert majority(["PASS", "FAIL", "NOT_APPLICABLE", "NOT_APPLICABLE", "PASS"]) == ("ABSTAIN", 0.4)
    with pytest.raises(ValueError):
        majority([])


@pytest.mark.django_db
def test_the_admin_shows_a_used_config_read_only(admin_client):
    config = JudgeConfig.objects.create(name="j", backend="openai", model_id="m-2026-01")
    url = f"/admin/judging/judgeconfig/{config.pk}/change/"
    assert 'name="model_id"' in admin_client.get(url).content.decode()
    JudgeRun.objects.create(eval_set=make_eval_set(), rubric_version=make_rubric_version(), judge_config=config)
    page = admin_client.get(url).content.decode()
    assert 'name="model_id"' not in page and "m-2026-01" in page
