"""The labeling page of a fresh case, filled in from a cached shell (labeling.page_shell): byte for byte the
template's page, never one person's or one case's values on another's page, and only for fresh cases."""

from __future__ import annotations

import re
from datetime import timedelta

import pytest
from django.core.cache import caches
from django.db import connection
from django.http import Http404
from django.test import Client
from django.utils import timezone

from labeling import annotation_page, page_shell
from labeling.guards import own_annotation, page_along
from labeling.models import Annotation, Role
from labeling.sessions import SessionStore, read_along

from .factories import make_output
from .labeling_helpers import (
    all_answers,
    labeling_setup,
    page_url,
    save_url,
    submit_url,
)
from .labeling_helpers import (  # noqa: F401 - fast_passwords is an autouse fixture
    claim_via_next as claim,
)

pytestmark = pytest.mark.django_db

TOKEN = re.compile(r'(name="csrfmiddlewaretoken" value="|"X-CSRFToken": ")[A-Za-z0-9]{64}')


@pytest.fixture(autouse=True)
def empty_fragments():
    caches["fragments"].clear()


@pytest.fixture
def fills(monkeypatch):
    """How many pages came from the shell."""
    calls = []
    real = page_shell.fill

    def counting(*args, **kwargs):
        calls.append(args[1].pk)
        return real(*args, **kwargs)

    monkeypatch.setattr(page_shell, "fill", counting)
    return calls


def answer(client: Client, annotation: Annotation, rv, key: str, outcome: str = "PASS", evidence: str = "NONE"):
    data = {"criterion": key, "outcome": outcome, "evidence": evidence, "rubric_version": rv.pk}
    return client.post(save_url(annotation), data)


def template_page(client: Client, annotation: Annotation, monkeypatch) -> str:
    """The same page rendered by the template (the shell switched off)."""
    with monkeypatch.context() as m:
        m.setattr(annotation_page, "is_fresh", lambda annotation: False)
        return client.get(page_url(annotation)).content.decode()


def same_token(page: str) -> str:
    # Each request masks the CSRF secret afresh; everything else must be identical.
    return TOKEN.sub(r"\1<token>", page)


def test_a_fresh_cases_page_is_the_templates_page_byte_for_byte(client, annotator, monkeypatch, fills):
    eval_set, rv, outputs = labeling_setup(n_outputs=2)
    mine = claim(client, annotator, eval_set)
    shell_page = client.get(page_url(mine)).content.decode()
    assert fills == [mine.pk]
    assert shell_page.count("<fieldset") == 2 and "<icewater:" not in shell_page
    assert same_token(shell_page) == same_token(template_page(client, mine, monkeypatch))
    assert len(fills) == 1  # the second page was the template's

    # Also with a message waiting: submitting opens the next case with "Submitted case-..." on top.
    for key, (outcome, evidence) in all_answers(rv).items():
        answer(client, mine, rv, key, outcome, evidence)
    response = client.post(submit_url(mine), {"rubric_version": rv.pk})
    following = Annotation.objects.filter(annotator=annotator).latest("pk")
    assert response.status_code == 302 and following != mine
    waiting = client.cookies["messages"].value
    shell_page = client.get(page_url(following)).content.decode()
    assert fills == [mine.pk, following.pk]
    assert f'<li class="msg msg-success">Submitted {mine.output.case.case_id}.</li>' in shell_page
    client.cookies["messages"] = waiting  # the same message once more, for the template's page
    assert same_token(shell_page) == same_token(template_page(client, following, monkeypatch))
    assert "msg-success" not in client.get(page_url(following)).content.decode()  # shown once, then gone


def test_each_person_and_case_gets_their_own_values(annotator, annotator2, lead, fills):
    eval_set, rv, outputs = labeling_setup(n_outputs=2)
    outputs[1].response = "A different reply for the second case."
    outputs[1].save()
    pages = {}
    for user in (annotator, annotator2, lead):
        client = Client()
        annotation = claim(client, user, eval_set)
        pages[user.username] = (annotation, client.get(page_url(annotation)).content.decode())
    assert len(fills) == 3
    for username, (annotation, page) in pages.items():
        assert f"<span>{username}</span>" in page
        assert page.count(f'action="{save_url(annotation)}"') == 2
        assert f'action="{submit_url(annotation)}"' in page
        assert f'data-annotation="{annotation.pk}"' in page
        assert f"<h1>{annotation.output.case.case_id}</h1>" in page
        assert annotation.output.response in page
        others = [a for name, (a, _) in pages.items() if name != username]
        assert not any(save_url(a) in page or f'data-annotation="{a.pk}"' in page for a in others)
        assert not any(f"<span>{name}</span>" in page for name in pages if name != username)
    assert ">Queues</a>" in pages[lead.username][1]  # the lead's menu, on the lead's shell only
    assert ">Queues</a>" not in pages[annotator.username][1]


def test_a_renamed_or_promoted_person_gets_a_new_shell(client, annotator, fills):
    eval_set, rv, outputs = labeling_setup()
    mine = claim(client, annotator, eval_set)
    before = annotator.username
    assert f"<span>{before}</span>" in client.get(page_url(mine)).content.decode()
    annotator.username, annotator.role = "ann-renamed", Role.LEAD
    annotator.save()
    page = client.get(page_url(mine)).content.decode()
    assert len(fills) == 2
    assert "<span>ann-renamed</span>" in page and f"<span>{before}</span>" not in page
    assert ">Queues</a>" in page


def test_placeholder_lookalikes_in_case_data_are_escaped_never_filled_in(client, annotator, fills):
    eval_set, rv, _ = labeling_setup(n_outputs=0)
    eval_set.name = "set <icewater:csrf-token>"
    eval_set.save()
    make_output(
        eval_set,
        case_id="case-<icewater:transcript>",
        input="Input <icewater:save-url> & <b>",
        response="Reply <icewater:messages> <icewater:output-name>",
        reference="Ref <icewater:annotation-pk>",
        tool_calls=[{"name": "<icewater:held-until>", "args": {"q": "<icewater:submit-url>"}, "response": {}}],
    )
    mine = claim(client, annotator, eval_set)
    page = client.get(page_url(mine)).content.decode()
    assert fills == [mine.pk]
    assert "<icewater:" not in page
    for text in (
        "set &lt;icewater:csrf-token&gt;",
        "<h1>case-&lt;icewater:transcript&gt;</h1>",
        "Input &lt;icewater:save-url&gt; &amp; &lt;b&gt;",
        "Reply &lt;icewater:messages&gt; &lt;icewater:output-name&gt;",
        "Ref &lt;icewater:annotation-pk&gt;",
        "&lt;icewater:held-until&gt;",
        "&lt;icewater:submit-url&gt;",
    ):
        assert text in page, text
    assert page.count(f'action="{save_url(mine)}"') == 2


def test_pages_that_are_not_fresh_come_from_the_template(client, annotator, lead, fills):
    eval_set, rv, outputs = labeling_setup(n_outputs=3)
    mine = claim(client, annotator, eval_set)
    answer(client, mine, rv, "next_step")
    assert "1</span>/2 answered" in client.get(page_url(mine)).content.decode()  # a saved label

    lapsed = claim(Client(), lead, eval_set)
    Annotation.objects.filter(pk=lapsed.pk).update(reserved_until=timezone.now() - timedelta(minutes=1))
    client.force_login(lead)
    assert "Reservation lapsed at" in client.get(page_url(lapsed)).content.decode()

    client.force_login(annotator)
    for key, (outcome, evidence) in all_answers(rv).items():
        answer(client, mine, rv, key, outcome, evidence)
    client.post(submit_url(mine), {"rubric_version": rv.pk})
    assert "Submitted " in client.get(page_url(mine)).content.decode()
    assert "Save correction" in client.get(page_url(mine) + "?correct=1").content.decode()
    assert fills == []


def test_the_shell_page_runs_one_statement_once_warm(client, annotator, django_assert_num_queries):
    eval_set, rv, outputs = labeling_setup()
    mine = claim(client, annotator, eval_set)
    client.get(page_url(mine))  # renders the criteria and the shell once
    # The session with its user and the annotation with everything it shows: one statement on PostgreSQL.
    with django_assert_num_queries(1 if connection.vendor == "postgresql" else 2):
        assert client.get(page_url(mine)).status_code == 200


@pytest.mark.skipif(connection.vendor != "postgresql", reason="a LATERAL join is a PostgreSQL matter")
def test_the_annotation_that_rides_along_with_the_session_is_only_ever_its_annotators(
    client, annotator, annotator2, django_assert_num_queries
):
    eval_set, rv, outputs = labeling_setup(n_outputs=2)
    mine = claim(client, annotator, eval_set)
    theirs = claim(Client(), annotator2, eval_set)

    def along_row(user, pk):
        session = SessionStore(client.cookies["sessionid"].value)
        read_along(session, page_along(pk))
        session.load()
        assert session.preloaded_user.pk == user.pk
        return session.along_row

    row = along_row(annotator, mine.pk)
    with django_assert_num_queries(0):  # the row it brought is the page's row: nothing more to read
        annotation = own_annotation(annotator, mine.pk, page=True, row=row)
    assert (annotation.pk, annotation.output_id, annotation.has_labels) == (mine.pk, mine.output_id, False)
    assert annotation.output.case.eval_set.name == eval_set.name and annotation.rubric_version.ref == rv.ref

    assert along_row(annotator, theirs.pk) is None  # another annotator's annotation does not ride along
    # A row offered for another annotation or another user is not trusted: it is read again (and refused).
    with pytest.raises(Http404):
        own_annotation(annotator2, mine.pk, page=True, row=row)
    with django_assert_num_queries(1):
        assert own_annotation(annotator2, theirs.pk, page=True, row=row).pk == theirs.pk

    # Through the page: another annotator's id is a 404; a session whose password hash no longer verifies
    # is signed out before its row could be used.
    assert client.get(page_url(theirs)).status_code == 404
    annotator.set_password("a-brand-new-password-1")
    annotator.save()
    response = client.get(page_url(mine))
    assert response.status_code == 302 and "/accounts/login/" in response["Location"]


@pytest.mark.skipif(connection.vendor != "postgresql", reason="prepared statements are a PostgreSQL matter")
def test_the_session_and_annotation_reads_are_prepared_statements_on_postgresql(client, annotator):
    def prepared() -> list[str]:
        with connection.cursor() as cursor:
            cursor.execute("SELECT statement FROM pg_prepared_statements")
            return [row[0] for row in cursor.fetchall()]

    eval_set, rv, outputs = labeling_setup()
    mine = claim(client, annotator, eval_set)
    with connection.cursor() as cursor:
        cursor.execute("DEALLOCATE ALL")
    connection.connection._prepared.clear()  # psycopg's record of what it prepared, gone with DEALLOCATE ALL
    options = connection.settings_dict["OPTIONS"]
    if options.get("prepare_threshold") is None:
        pytest.fail("PostgreSQL connections should allow prepared statements (settings: ICEWATER_DB_PREPARED)")

    # Negative control first: with prepared statements off, the same page and save prepare nothing.
    saved = options.pop("prepare_threshold")
    try:
        assert "0</span>/2 answered" in client.get(page_url(mine)).content.decode()
        assert answer(client, mine, rv, "next_step").status_code == 302
        assert prepared() == []
    finally:
        options["prepare_threshold"] = saved
    assert answer(client, mine, rv, "correct_amount").status_code == 302
    assert "2</span>/2 answered" in client.get(page_url(mine)).content.decode()
    statements = prepared()
    # The page's one statement: the session, its user and the annotation (LATERAL); the save's annotation read.
    assert any(s.startswith("SELECT s.session_data") and "LEFT JOIN LATERAL" in s for s in statements), statements
    assert any(s.startswith('SELECT a."id"') and "FOR NO KEY UPDATE" in s for s in statements), statements


def test_annotation_urls_are_what_reverse_gives_also_under_a_script_prefix():
    from django.urls import reverse, set_script_prefix

    from labeling.annotation_page import annotation_url

    try:
        for prefix in ("/", "/icewater/"):
            set_script_prefix(prefix)
            for name in ("labeling:save_label", "labeling:submit"):
                for pk in (1, 42, 987654321):
                    assert annotation_url(name, pk) == reverse(name, args=[pk])
            assert annotation_url("labeling:submit", 42).startswith(prefix)
    finally:
        set_script_prefix("/")


def test_messages_show_once_escaped_and_wait_through_a_partial(client, annotator):
    from django.contrib.messages import constants
    from django.contrib.messages.storage.base import Message

    from config.context_processors import render_messages

    assert render_messages([]) == ""
    html = render_messages([Message(constants.SUCCESS, "Saved <b>x</b> & y"), Message(constants.ERROR, "No")])
    assert html == (
        '\n    <ul class="messages" role="status">\n'
        '      <li class="msg msg-success">Saved &lt;b&gt;x&lt;/b&gt; &amp; y</li><li class="msg msg-error">No</li>\n'
        "    </ul>\n    "
    )

    eval_set, rv, outputs = labeling_setup(n_outputs=2)
    mine = claim(client, annotator, eval_set)
    for key, (outcome, evidence) in all_answers(rv).items():
        answer(client, mine, rv, key, outcome, evidence)
    client.post(submit_url(mine), {"rubric_version": rv.pk})  # "Submitted case-001." waits for the next page
    following = Annotation.objects.filter(annotator=annotator).latest("pk")
    # An htmx save answers with one criterion's partial: the message is not printed there, so it still waits.
    data = {"criterion": "next_step", "outcome": "PASS", "evidence": "NONE", "rubric_version": rv.pk}
    partial = client.post(save_url(following), data, HTTP_HX_REQUEST="true").content.decode()
    assert "Submitted" not in partial
    home = client.get("/").content.decode()  # a page through base.html (not the labeling page's own path)
    assert f'<li class="msg msg-success">Submitted {mine.output.case.case_id}.</li>' in home
    assert "msg-success" not in client.get("/").content.decode()  # shown once
