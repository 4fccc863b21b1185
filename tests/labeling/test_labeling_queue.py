"""The labeling queue: Next, reservations and their lapse, and moving the queue to a new rubric version."""

from __future__ import annotations

import re
from datetime import timedelta

import pytest
from django.urls import reverse
from django.utils import timezone

from evals.models import Role, RubricVersion
from labeling.models import Annotation, Label, LabelingQueue
from labeling.queue import RESERVATION, claim_next, current_queue
from tests.factories import (
    all_answers,
    annotate_directly,
    default_workspace,
    labeling_setup,
    make_rubric_version,
    make_user,
    six_criteria,
)
from tests.labeling_helpers import next_url, page_url, save_url

pytestmark = pytest.mark.django_db


def claim(user, eval_set):
    result = claim_next(user=user, queue=current_queue(eval_set))
    return result.annotation if result else None


def test_the_reservation_is_thirty_minutes():
    assert RESERVATION == timedelta(minutes=30)


def test_two_annotators_get_the_two_slots_of_the_same_output_first(annotator, annotator2):
    eval_set, rv, outputs = labeling_setup(n_outputs=3)
    a = claim(annotator, eval_set)
    b = claim(annotator2, eval_set)
    assert (a.output, a.slot) == (outputs[0], 1)
    assert (b.output, b.slot) == (outputs[0], 2)
    assert a.reserved_until > timezone.now() + RESERVATION - timedelta(minutes=1)


def test_a_third_annotator_gets_the_next_output_when_both_slots_are_taken(annotator, annotator2):
    eval_set, rv, outputs = labeling_setup(n_outputs=2)
    claim(annotator, eval_set)
    claim(annotator2, eval_set)
    third = claim(make_user("ann3"), eval_set)
    assert (third.output, third.slot) == (outputs[1], 1)


def test_next_resumes_the_open_draft_instead_of_reserving_another(annotator):
    eval_set, rv, outputs = labeling_setup(n_outputs=3)
    first = claim(annotator, eval_set)
    again = claim(annotator, eval_set)
    assert again.pk == first.pk
    assert Annotation.objects.count() == 1


def test_an_annotator_never_gets_an_output_they_labeled(annotator):
    eval_set, rv, outputs = labeling_setup(n_outputs=2)
    annotate_directly(outputs[0], rv, annotator, all_answers(rv))
    got = claim(annotator, eval_set)
    assert got.output == outputs[1]
    got.delete()
    annotate_directly(outputs[1], rv, annotator, all_answers(rv))
    assert claim(annotator, eval_set) is None


def test_imported_labels_in_a_later_slot_also_count_as_labeled(annotator, annotator2):
    eval_set, rv, (output,) = labeling_setup()
    annotate_directly(output, rv, annotator2, all_answers(rv), slot=1)
    annotate_directly(output, rv, annotator, all_answers(rv), slot=3)
    assert claim(annotator, eval_set) is None


def test_a_lapsed_reservation_frees_the_slot_and_drops_the_abandoned_draft(annotator, annotator2):
    eval_set, rv, (output,) = labeling_setup()
    walked_away = annotate_directly(output, rv, annotator, {"correct_amount": ("PASS", "NONE")}, submit=False)
    annotate_directly(output, rv, make_user("ann3"), all_answers(rv), slot=2)
    assert claim(annotator2, eval_set) is None  # slot 1 is still held
    Annotation.objects.filter(pk=walked_away.pk).update(reserved_until=timezone.now() - timedelta(seconds=1))
    taken = claim(annotator2, eval_set)
    assert (taken.output, taken.slot, taken.annotator) == (output, 1, annotator2)
    assert not Annotation.objects.filter(pk=walked_away.pk).exists()
    assert not Label.objects.filter(annotation_id=walked_away.pk).exists()


def test_the_owner_of_a_lapsed_draft_that_nobody_took_gets_it_back(annotator):
    eval_set, rv, (output,) = labeling_setup()
    draft = annotate_directly(output, rv, annotator, {"correct_amount": ("PASS", "NONE")}, submit=False)
    Annotation.objects.filter(pk=draft.pk).update(reserved_until=timezone.now() - timedelta(hours=2))
    again = claim(annotator, eval_set)
    assert again.pk == draft.pk
    assert again.reserved_until > timezone.now()
    assert again.labels.count() == 1


def test_each_save_extends_the_reservation(client, annotator):
    eval_set, rv, (output,) = labeling_setup()
    client.force_login(annotator)
    client.post(next_url(eval_set))
    annotation = Annotation.objects.get()
    Annotation.objects.filter(pk=annotation.pk).update(reserved_until=timezone.now() + timedelta(minutes=1))
    client.post(
        save_url(annotation),
        {"criterion": "correct_amount", "outcome": "PASS", "evidence": "NONE", "rubric_version": rv.pk},
    )
    annotation.refresh_from_db()
    assert annotation.reserved_until > timezone.now() + RESERVATION - timedelta(minutes=1)


def test_next_says_so_when_nothing_is_left(client, annotator):
    eval_set, rv, (output,) = labeling_setup()
    annotate_directly(output, rv, annotator, all_answers(rv))
    client.force_login(annotator)
    response = client.post(next_url(eval_set), follow=True)
    assert "Nothing left for you" in response.content.decode()


def test_next_without_an_open_queue_explains_who_opens_it(client, annotator):
    eval_set, rv, _ = labeling_setup()
    LabelingQueue.objects.all().delete()
    client.force_login(annotator)
    response = client.post(next_url(eval_set), follow=True)
    assert "no open labeling queue" in response.content.decode()
    assert not Annotation.objects.exists()


def test_next_is_a_post(client, annotator):
    eval_set, rv, _ = labeling_setup()
    client.force_login(annotator)
    assert client.get(next_url(eval_set)).status_code == 405
    assert not Annotation.objects.exists()


def test_only_annotators_may_press_next(client, annotator, reviewer, lead):
    eval_set, rv, outputs = labeling_setup(n_outputs=3)
    for user in (reviewer, lead):  # they can read verdicts and other people's labels: not blind
        client.force_login(user)
        response = client.post(next_url(eval_set))
        assert response.status_code == 403
        assert "Only annotators label" in response.content.decode()
    assert not Annotation.objects.exists()
    client.force_login(annotator)  # negative control: the same press by an annotator reserves a slot
    assert client.post(next_url(eval_set)).status_code == 302
    assert list(Annotation.objects.values_list("annotator__username", flat=True)) == ["ann"]


# --- Moving the queue to a new rubric version -------------------------------------------------------


def move_url(eval_set):
    return reverse("labeling:queue_move", args=[eval_set.pk])


def test_only_a_lead_moves_the_queue(client, annotator, reviewer, lead):
    eval_set, rv, _ = labeling_setup()
    v2 = make_rubric_version(name=rv.rubric.name, version="2")
    for user in (annotator, reviewer):
        client.force_login(user)
        assert client.post(move_url(eval_set), {"rubric_version": v2.pk}).status_code == 403
        assert client.get(reverse("labeling:queues")).status_code == 403
    assert current_queue(eval_set).rubric_version == rv
    client.force_login(lead)
    assert client.get(reverse("labeling:queues")).status_code == 200
    response = client.post(move_url(eval_set), {"rubric_version": v2.pk, "reason": "criteria drift"})
    assert response.status_code == 302
    queue = current_queue(eval_set)
    assert (queue.rubric_version, queue.opened_by, queue.reason) == (v2, lead, "criteria drift")
    old = LabelingQueue.objects.get(eval_set=eval_set, is_current=False)
    assert old.rubric_version == rv  # the history stays


def test_the_queue_cannot_move_to_a_retired_version_or_to_where_it_is(client, lead):
    eval_set, rv, _ = labeling_setup()
    retired = make_rubric_version(name=rv.rubric.name, version="0")
    RubricVersion.objects.filter(pk=retired.pk).update(status=RubricVersion.Status.RETIRED)
    client.force_login(lead)
    response = client.post(move_url(eval_set), {"rubric_version": retired.pk})
    assert response.status_code == 422
    assert "Choose a rubric version that exists, is not retired" in response.content.decode()
    response = client.post(move_url(eval_set), {"rubric_version": rv.pk})
    assert response.status_code == 422
    assert "already uses" in response.content.decode()
    response = client.post(move_url(eval_set), {"rubric_version": "garbage"})
    assert response.status_code == 422
    assert LabelingQueue.objects.filter(eval_set=eval_set).count() == 1


def test_labels_stay_with_their_version_and_next_moves_only_when_the_lead_says_so(client, annotator, lead):
    eval_set, v1, outputs = labeling_setup(n_outputs=2)
    done = annotate_directly(outputs[0], v1, annotator, all_answers(v1))
    v2 = make_rubric_version(name=v1.rubric.name, version="2")  # published mid-labeling
    client.force_login(annotator)
    client.post(next_url(eval_set))
    assert Annotation.objects.latest("pk").rubric_version == v1  # not moved yet
    client.force_login(lead)
    client.post(move_url(eval_set), {"rubric_version": v2.pk})
    client.force_login(annotator)
    client.post(next_url(eval_set))
    newest = Annotation.objects.latest("pk")
    assert newest.rubric_version == v2
    assert newest.output == outputs[0]  # under v2 nobody has labeled anything yet
    done.refresh_from_db()
    assert done.rubric_version == v1 and done.labels.count() == 2


def test_a_draft_under_the_old_version_is_kept_but_refused(client, annotator, lead):
    eval_set, v1, (output,) = labeling_setup()
    client.force_login(annotator)
    client.post(next_url(eval_set))
    draft = Annotation.objects.get()
    data = {"criterion": "correct_amount", "outcome": "PASS", "evidence": "NONE", "rubric_version": v1.pk}
    client.post(save_url(draft), data)
    v2 = make_rubric_version(name=v1.rubric.name, version="2")
    client.force_login(lead)
    client.post(move_url(eval_set), {"rubric_version": v2.pk})
    client.force_login(annotator)
    response = client.post(save_url(draft), {**data, "outcome": "FAIL"}, HTTP_HX_REQUEST="true")
    assert response.status_code == 409
    body = response.content.decode()
    assert "moved this queue from" in body and v2.ref in body and "nothing was saved" in body
    assert Label.objects.get().outcome == "PASS"
    page = client.get(page_url(draft)).content.decode()
    assert "can no longer be changed or submitted" in page
    assert f"Next under {v2.ref}" in page


def test_a_new_rubric_version_shows_its_own_criteria_and_an_old_annotation_keeps_its_own(
    client, annotator, annotator2, lead
):
    def legends(page: str) -> list[str]:
        return re.findall(r"<legend>.*?<code>(.*?)</code></legend>", page)

    eval_set, v1, (output,) = labeling_setup()
    client.force_login(annotator)
    client.post(next_url(eval_set))
    old = Annotation.objects.get(annotator=annotator)
    assert legends(client.get(page_url(old)).content.decode()) == ["correct_amount", "next_step"]
    v2 = make_rubric_version(name=v1.rubric.name, version="2", criteria=six_criteria())
    client.force_login(lead)
    client.post(move_url(eval_set), {"rubric_version": v2.pk})
    client.force_login(annotator2)
    client.post(next_url(eval_set))
    new = Annotation.objects.get(annotator=annotator2)
    assert new.rubric_version == v2
    assert legends(client.get(page_url(new)).content.decode()) == [f"crit_{i}" for i in range(1, 7)]
    client.force_login(annotator)
    page = client.get(page_url(old)).content.decode()
    assert legends(page) == ["correct_amount", "next_step"]
    assert "Not current rubric" in page and "<fieldset disabled" in page


def test_a_submitted_annotation_cannot_be_corrected_after_the_queue_moved(client, annotator, lead):
    eval_set, v1, (output,) = labeling_setup()
    done = annotate_directly(output, v1, annotator, all_answers(v1))
    v2 = make_rubric_version(name=v1.rubric.name, version="2")
    client.force_login(lead)
    client.post(move_url(eval_set), {"rubric_version": v2.pk})
    client.force_login(annotator)
    data = {"criterion": "correct_amount", "outcome": "FAIL", "evidence": "NONE", "rubric_version": v1.pk}
    assert client.post(save_url(done), data, HTTP_HX_REQUEST="true").status_code == 409
    assert Label.objects.filter(annotation=done).count() == 2


def test_a_lead_can_open_a_queue_for_an_eval_set_that_has_none(client, lead):
    eval_set, rv, _ = labeling_setup()
    LabelingQueue.objects.all().delete()
    client.force_login(lead)
    page = client.get(reverse("labeling:queues")).content.decode()
    assert "Open queue" in page
    client.post(move_url(eval_set), {"rubric_version": rv.pk})
    assert current_queue(eval_set).rubric_version == rv


def test_the_home_page_offers_each_role_its_next_step(client, annotator, reviewer, lead):
    eval_set, rv, outputs = labeling_setup(n_outputs=2)
    client.force_login(annotator)
    page = client.get(reverse("home")).content.decode()
    assert ">Next</button>" in page and eval_set.name in page
    client.post(next_url(eval_set))
    page = client.get(reverse("home")).content.decode()
    assert "Continue case-001" in page and ">My work</a>" in page
    assert "Rubric versions" not in page  # the staff tables are for staff
    for user in (reviewer, lead):  # labeling is not offered to who can see verdicts
        client.force_login(user)
        page = client.get(reverse("home")).content.decode()
        assert "Adjudicate" in page and "Progress" in page
        assert ">Next</button>" not in page and ">My work</a>" not in page
        assert "Labeling is for annotators" in page
    assert lead.role_in(default_workspace()) == Role.LEAD
    assert "Queues" in client.get(reverse("home")).content.decode()


def test_the_open_queue_command_opens_moves_and_refuses_clearly(lead, annotator):
    from io import StringIO

    from django.core.management import CommandError, call_command

    eval_set, rv, _ = labeling_setup()
    LabelingQueue.objects.all().delete()
    out = StringIO()
    call_command("open_queue", "--eval-set", eval_set.name, "--rubric", rv.ref, "--by", "lead", stdout=out)
    assert f"now labeled under {rv.ref}" in out.getvalue()
    call_command("open_queue", "--eval-set", eval_set.name, "--rubric", rv.ref, "--by", "lead", stdout=out)
    assert "nothing changed" in out.getvalue()
    assert LabelingQueue.objects.count() == 1
    for args, message in (
        (["--eval-set", "nope", "--rubric", rv.ref, "--by", "lead"], 'there is no eval set "nope"'),
        (["--eval-set", eval_set.name, "--rubric", "nope@1", "--by", "lead"], "there is no rubric 'nope' \\(known: "),
        (["--eval-set", eval_set.name, "--rubric", rv.ref, "--by", "ann"], "only a lead opens or moves"),
    ):
        with pytest.raises(CommandError, match=message):
            call_command("open_queue", *args)
    assert LabelingQueue.objects.count() == 1
