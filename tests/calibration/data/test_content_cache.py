"""The report's figures are cached under a digest of their data: computed once per content, never stale."""

from __future__ import annotations

import shutil

import pandas as pd
import pytest

from calibration.data import content_cache
from calibration.report import compose
from calibration.report.compose import calibration_report

from tests.factories import adjudicate, bulk_calibration, make_eval_set, make_judge, make_rubric_version, make_user

pytestmark = pytest.mark.django_db


@pytest.fixture
def counted(monkeypatch):
    """build_rows, counting its calls."""
    calls = []
    real = compose.build_rows

    def counting(**kwargs):
        calls.append(1)
        return real(**kwargs)

    monkeypatch.setattr(compose, "build_rows", counting)
    return calls


def test_the_rows_are_computed_once_per_content_and_again_as_soon_as_the_gold_changes(counted, settings):
    settings.CACHES = {"default": {"BACKEND": "django.core.cache.backends.locmem.LocMemCache", "LOCATION": "rows"}}
    es, rv, judge = make_eval_set("cal"), make_rubric_version("refund", "1"), make_judge("gpt-judge")
    # 145 true passes, 15 false passes, 5 false fails, 35 true fails: kappa 0.25 / 0.35 (worked in
    # test_calibration_report.py). The false passes are outputs 145..159.
    outputs = bulk_calibration(es, rv, judge, {"correct_amount": (145, 15, 5, 35)})
    first = calibration_report(eval_set=es, rubric_version=rv, judge_config=judge).row("correct_amount")
    again = calibration_report(eval_set=es, rubric_version=rv, judge_config=judge).row("correct_amount")
    assert len(counted) == 1  # the second report came from the cache
    assert first.judge.kappa == again.judge.kappa == pytest.approx(0.25 / 0.35) and again.judge.kappa_ci == first.judge.kappa_ci

    # A reviewer settles one false pass as PASS: 146 / 14 / 5 / 35. By hand: agreement 181/200 = 0.905;
    # judge passes 0.80, gold passes 151/200 = 0.755; chance 0.8 * 0.755 + 0.2 * 0.245 = 0.653;
    # kappa (0.905 - 0.653) / (1 - 0.653) = 0.252 / 0.347.
    adjudicate(outputs[145], rv, "correct_amount", "PASS", by=make_user("rita", role="reviewer"))
    changed = calibration_report(eval_set=es, rubric_version=rv, judge_config=judge).row("correct_amount")
    assert len(counted) == 2
    assert (changed.judge.true_pass, changed.judge.false_pass) == (146, 14)
    assert changed.judge.kappa == pytest.approx(0.252 / 0.347)


def test_every_agent_version_segment_is_cached_by_its_own_content(counted, settings):
    settings.CACHES = {"default": {"BACKEND": "django.core.cache.backends.locmem.LocMemCache", "LOCATION": "segs"}}
    es, rv, judge = make_eval_set("cal"), make_rubric_version("refund", "1"), make_judge("gpt-judge")
    bulk_calibration(es, rv, judge, {"correct_amount": (20, 2, 3, 10)})
    segmented = compose.segmented_report(eval_set=es, rubric_version=rv, judge_config=judge)
    assert len(counted) == 1 and [s.agent_version for s in segmented.segments] == ["default"]
    # The only segment holds every output, so the whole-set report is the same content: no new computation.
    whole = calibration_report(eval_set=es, rubric_version=rv, judge_config=judge)
    assert len(counted) == 1 and whole.row("correct_amount").judge.n == 35


def frame(**columns) -> pd.DataFrame:
    return pd.DataFrame(columns)


def test_the_digest_tells_apart_frames_that_differ_in_one_value_a_type_or_a_column_name():
    base = frame(output=[1, 2, 3], outcome=["PASS", "FAIL", "PASS"])
    assert content_cache.digest(base) == content_cache.digest(frame(output=[1, 2, 3], outcome=["PASS", "FAIL", "PASS"]))
    assert content_cache.digest(base) != content_cache.digest(frame(output=[1, 2, 3], outcome=["PASS", "PASS", "PASS"]))
    assert content_cache.digest(base) != content_cache.digest(frame(item=[1, 2, 3], outcome=["PASS", "FAIL", "PASS"]))
    as_float = frame(output=[1.0, 2.0, 3.0], outcome=["PASS", "FAIL", "PASS"])
    assert content_cache.digest(base) != content_cache.digest(as_float)
    # Two parts never read as one: ("ab", "c") is not ("a", "bc").
    assert content_cache.digest("ab", "c") != content_cache.digest("a", "bc")


def test_a_changed_formula_changes_every_key(tmp_path, monkeypatch):
    """The file cache outlives restarts: an entry written by older code must never answer for newer code."""
    for name in content_cache.SOURCES:
        source, copy = content_cache.ROOT / name, tmp_path / name
        if source.is_dir():
            shutil.copytree(source, copy, ignore=shutil.ignore_patterns("__pycache__"))
        else:
            copy.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy(source, copy)
    monkeypatch.setattr(content_cache, "ROOT", tmp_path)
    content_cache.code_digest.cache_clear()
    try:
        before = content_cache.digest("same data")
        content_cache.code_digest.cache_clear()
        assert content_cache.digest("same data") == before  # negative control: same code, same key
        metrics = tmp_path / "calibration/stats/metrics.py"
        metrics.write_text(metrics.read_text() + "\nMIN_N = 1\n")
        content_cache.code_digest.cache_clear()
        assert content_cache.digest("same data") != before
    finally:
        monkeypatch.undo()
        content_cache.code_digest.cache_clear()
