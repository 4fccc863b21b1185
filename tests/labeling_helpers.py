"""Addresses and page steps shared by the labeling, adjudication and progress tests (their data: tests/factories.py)."""

from __future__ import annotations

from django.urls import reverse

from evals.models import EvalSet, User
from labeling.models import Annotation


def save_url(annotation: Annotation) -> str:
    return reverse("labeling:save_label", args=[annotation.pk])


def submit_url(annotation: Annotation) -> str:
    return reverse("labeling:submit", args=[annotation.pk])


def page_url(annotation: Annotation) -> str:
    return reverse("labeling:annotate", args=[annotation.pk])


def claim_via_next(client, user: User, eval_set: EvalSet) -> Annotation:
    """Sign `client` in as `user` and press Next: the annotation it reserved."""
    client.force_login(user)
    client.post(next_url(eval_set))
    return Annotation.objects.filter(annotator=user).latest("pk")


def next_url(eval_set: EvalSet) -> str:
    return reverse("labeling:next", args=[eval_set.pk])
