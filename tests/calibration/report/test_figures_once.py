"""A figure the pages share is computed once: the human ceiling (report, Compare, progress) and a kappa per table."""

from __future__ import annotations

import numpy as np
import pytest
from django.urls import reverse

from calibration.report import ceiling
from calibration.report.compose import calibration_report
from calibration.stats import metrics
from tests.factories import (
    annotate,
    annotator,
    bulk_calibration,
    make_eval_set,
    make_judge,
    make_output,
    make_rubric_version,
)

pytestmark = pytest.mark.django_db


@pytest.fixture
def human_calls(monkeypatch, settings):
    """ceiling._human (the human ceiling), counting its calls, over a fresh in-memory cache."""
    # Only the default cache replaced: sessions keep their own (cached_db on Redis, config/settings.py).
    settings.CACHES = {
        **settings.CACHES,
        "default": {"BACKEND": "django.core.cache.backends.locmem.LocMemCache", "LOCATION": "once"},
    }
    calls = []
    real = ceiling._human

    def counting(labels):
        calls.append(1)
        return real(labels)

    monkeypatch.setattr(ceiling, "_human", counting)
    return calls


def test_the_progress_page_reads_the_human_ceiling_the_report_computed(client, lead, human_calls):
    es, rv, judge = make_eval_set("cal"), make_rubric_version("refund", "1"), make_judge("gpt-judge")
    # Two annotators agree on every item, 30 PASS and 20 FAIL: A vs B kappa is 1 (observed agreement 1).
    outputs = bulk_calibration(es, rv, judge, {"correct_amount": (25, 5, 5, 15)})
    row = calibration_report(eval_set=es, rubric_version=rv, judge_config=judge).row("correct_amount")
    assert len(human_calls) == 1 and row.human.kappa == 1.0
    client.force_login(lead)
    page = client.get(reverse("overview:progress") + f"?eval_set={es.pk}&rubric_version={rv.pk}")
    assert page.status_code == 200
    assert len(human_calls) == 1  # the report's entry: the same labels, the same figures
    assert page.context["progress"].criteria[0].agreement.kappa == 1.0

    # Negative control: a third person's label is new content, so the ceiling is computed again.
    annotate(outputs[0], rv, annotator("cy"), 3, {"correct_amount": "FAIL"})
    client.get(reverse("overview:progress") + f"?eval_set={es.pk}&rubric_version={rv.pk}")
    assert len(human_calls) == 2


def test_the_progress_page_costs_the_same_queries_whatever_the_labels(
    client, lead, human_calls, django_assert_max_num_queries
):
    es, rv, judge = make_eval_set("cal"), make_rubric_version("refund", "1"), make_judge("gpt-judge")
    url = reverse("overview:progress") + f"?eval_set={es.pk}&rubric_version={rv.pk}"
    make_output(es, "only")
    client.force_login(lead)
    client.get(url)
    bulk_calibration(es, rv, judge, {"correct_amount": (40, 5, 5, 30), "next_step": (10, 2, 2, 10)})
    # Session and user, the pickers' eval sets and rubric versions, progress's seven queries, the versions
    # with work: the data's size adds nothing.
    with django_assert_max_num_queries(16):
        assert client.get(url).status_code == 200


def test_scikit_learn_computes_a_kappa_once_per_table(monkeypatch):
    calls = []
    real = metrics.cohen_kappa_score

    def counting(*args, **kwargs):
        calls.append(1)
        return real(*args, **kwargs)

    monkeypatch.setattr(metrics, "cohen_kappa_score", counting)
    metrics.sklearn_kappa.cache_clear()

    def table(tp: int, fp: int, fn: int, tn: int) -> tuple[np.ndarray, np.ndarray]:
        rater = ["PASS"] * (tp + fp) + ["FAIL"] * (fn + tn)
        gold = ["PASS"] * tp + ["FAIL"] * fp + ["PASS"] * fn + ["FAIL"] * tn
        return np.array(rater, dtype=object), np.array(gold, dtype=object)

    # By hand: n = 50, agreement (20 + 15) / 50 = 0.7; rater passes 25/50, gold 30/50; chance
    # 0.5 * 0.6 + 0.5 * 0.4 = 0.5; kappa (0.7 - 0.5) / (1 - 0.5) = 0.4.
    first = metrics.cohen_agreement(*table(20, 5, 10, 15))
    again = metrics.cohen_agreement(*table(20, 5, 10, 15))
    assert first.kappa == again.kappa == pytest.approx(0.4) and len(calls) == 1
    # Negative control: another table is asked of scikit-learn. n = 50, agreement 0.72, rater 0.52, gold 0.6,
    # chance 0.52 * 0.6 + 0.48 * 0.4 = 0.504, kappa 0.216 / 0.496.
    other = metrics.cohen_agreement(*table(21, 5, 9, 15))
    assert other.kappa == pytest.approx(0.216 / 0.496) and len(calls) == 2
