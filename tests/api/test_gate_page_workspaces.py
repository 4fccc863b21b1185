"""Workspaces on the gate page and its token panel (/api/gates/), and the OTLP receiver's binding (issue 36): a lead
sees, makes and revokes only their workspace's tokens; the form offers only its rubric versions and eval sets; the
commands shown with a new token name only its names; a traces token's spans go only into its own workspace."""

from __future__ import annotations

import pytest
from django.urls import reverse

from api.models import GateToken
from calibration.gate.release_gate import gate_and_record
from calibration.gate.request import GateRequest
from calibration.models import GateResult
from calibration.stats.policy import Tightening
from evals.models import Output, Role
from formats.models import TraceBinding
from judging.models import JudgeConfig, JudgeRun
from tests.api_helpers import create_token
from tests.factories import (
    default_workspace,
    make_eval_set,
    make_judge,
    make_rubric_version,
    make_user,
    make_workspace,
    set_role,
)
from tests.otel_helpers import export, post, refund_trace, traces_token
from tests.workspace_helpers import same_answer

pytestmark = pytest.mark.django_db


@pytest.fixture
def two(client):
    """Leads of A (the default workspace) and of B, each with a rubric, a token and a gate result of their own."""
    a, b = default_workspace(), make_workspace("team-b")
    lead_a, lead_b = make_user("lead-a", Role.LEAD, workspace=a), make_user("lead-b", Role.LEAD, workspace=b)
    rv_a = make_rubric_version("refund", "1", workspace=a)
    rv_b = make_rubric_version("b-secret-rubric", "1", workspace=b)
    create_token(client, lead_a, ["gate"], rv_a, project="a-pipeline")
    create_token(client, lead_b, ["gate"], rv_b, project="b-pipeline")
    for workspace, name in ((a, "rc-a-asked"), (b, "rc-b-asked")):
        gate_and_record(
            GateRequest(name, "x@1", "j", None, Tightening(None, None, None)),
            workspace=workspace,
            source=GateResult.Source.CLI,
        )
    return a, b, lead_a, lead_b, rv_a, rv_b


def test_the_page_lists_only_this_workspaces_tokens_and_gate_results(client, two):
    a, b, lead_a, lead_b, *_ = two
    client.force_login(lead_a)
    page = client.get(reverse("calibration:gates")).content.decode()
    assert "a-pipeline" in page and "rc-a-asked" in page  # the negative control: A's own are shown
    for of_b in ("b-pipeline", "rc-b-asked", "b-secret-rubric", "lead-b"):
        assert of_b not in page
    client.force_login(lead_b)
    page = client.get(reverse("calibration:gates")).content.decode()
    assert "b-pipeline" in page and "a-pipeline" not in page and "rc-a-asked" not in page


def test_a_token_is_made_in_the_workspace_the_lead_works_in(client, two):
    a, b, lead_a, *_ = two
    assert GateToken.objects.get(project="a-pipeline").workspace == a
    assert GateToken.objects.get(project="b-pipeline").workspace == b


def test_revoking_another_workspaces_token_answers_as_a_missing_one_and_changes_nothing(client, two):
    a, b, lead_a, *_ = two
    theirs = GateToken.objects.get(project="b-pipeline")
    missing = GateToken.objects.order_by("-pk").first().pk + 1000
    client.force_login(lead_a)
    foreign = client.post(reverse("calibration:revoke_token", args=[theirs.pk]))
    nowhere = client.post(reverse("calibration:revoke_token", args=[missing]))
    assert foreign.status_code == 404 and same_answer(foreign, nowhere)
    theirs.refresh_from_db()
    assert theirs.revoked_at is None
    mine = GateToken.objects.get(project="a-pipeline")
    assert client.post(reverse("calibration:revoke_token", args=[mine.pk])).status_code == 302  # negative control
    mine.refresh_from_db()
    assert mine.revoked_by == lead_a


def test_the_form_offers_and_takes_only_this_workspaces_rubric_versions_and_eval_sets(client, two):
    a, b, lead_a, lead_b, rv_a, rv_b = two
    es_b = make_eval_set("rc-b-traces", b)
    client.force_login(lead_a)
    page = client.get(reverse("calibration:gates")).content.decode()
    assert f'value="{rv_a.pk}"' in page and f'value="{rv_b.pk}"' not in page and "rc-b-traces" not in page
    missing = rv_b.pk + 1000
    form = {"project": "p", "eval_set_pattern": "*", "scopes": ["gate"], "judges": ""}
    foreign = client.post(reverse("calibration:create_token"), {**form, "rubric_version": rv_b.pk})
    nowhere = client.post(reverse("calibration:create_token"), {**form, "rubric_version": missing})
    assert foreign.status_code == 422 and same_answer(foreign, nowhere)
    traces = {**form, "rubric_version": rv_a.pk, "scopes": ["traces"], "trace_sample_one_in": 1}
    foreign = client.post(reverse("calibration:create_token"), {**traces, "trace_eval_set": es_b.pk})
    nowhere = client.post(reverse("calibration:create_token"), {**traces, "trace_eval_set": es_b.pk + 1000})
    assert foreign.status_code == 422 and same_answer(foreign, nowhere)
    assert GateToken.objects.count() == 2 and not TraceBinding.objects.exists()


def test_a_model_judge_of_another_workspace_does_not_stop_a_push_token_naming_it(client, two):
    """The form refuses a model config's name (its verdicts come only from its runs): of this workspace only."""
    a, b, lead_a, lead_b, rv_a, rv_b = two
    make_judge("gpt-judge", workspace=b, backend=JudgeConfig.Backend.OPENAI)
    create_token(client, lead_a, ["push"], rv_a, judges=("gpt-judge",))
    make_judge("own-model", workspace=a, backend=JudgeConfig.Backend.OPENAI)
    client.force_login(lead_a)
    data = {"project": "p", "rubric_version": rv_a.pk, "eval_set_pattern": "*", "scopes": ["push"]}
    refused = client.post(reverse("calibration:create_token"), {**data, "judges": "own-model"})
    assert refused.status_code == 422 and "own-model (" in refused.content.decode()  # the negative control


def test_a_new_tokens_commands_name_only_its_workspaces_eval_sets_and_judges(client, two):
    a, b, lead_a, lead_b, rv_a, rv_b = two
    make_eval_set("rc-a-1", a)
    JudgeRun.objects.create(eval_set=make_eval_set("cal", a), rubric_version=rv_a, judge_config=make_judge("a-judge"))
    make_eval_set("rc-b-newer", b)  # newer, and matches the pattern: of B, so never shown to A
    client.force_login(lead_a)
    data = {"project": "p", "rubric_version": rv_a.pk, "eval_set_pattern": "rc-*", "scopes": ["gate"], "judges": ""}
    page = client.post(reverse("calibration:create_token"), data).content.decode()
    assert "rc-a-1" in page and "a-judge" in page
    assert "rc-b-newer" not in page


def test_the_same_person_has_the_role_of_the_workspace_in_use_on_the_page(client, two):
    """A lead of B who is a reviewer in A: sees A's page without the form, and may not make a token in A."""
    a, b, lead_a, lead_b, rv_a, rv_b = two
    set_role(lead_b, Role.REVIEWER, a)
    client.force_login(lead_b)
    url = reverse("calibration:create_token")
    in_a = client.get(reverse("calibration:gates") + "?workspace=default").content.decode()
    assert "a-pipeline" in in_a and "Create token" not in in_a
    data = {"project": "p", "rubric_version": rv_a.pk, "eval_set_pattern": "*", "scopes": ["gate"], "judges": ""}
    assert client.post(f"{url}?workspace=default", data).status_code == 403
    in_b = client.get(reverse("calibration:gates") + "?workspace=team-b").content.decode()
    assert "b-pipeline" in in_b and "Create token" in in_b


def test_an_annotator_of_a_gets_no_gate_page_there(client, two):
    a, b, lead_a, lead_b, *_ = two
    set_role(lead_b, Role.ANNOTATOR, a)
    client.force_login(lead_b)
    assert client.get(reverse("calibration:gates") + "?workspace=default").status_code == 403
    assert client.get(reverse("calibration:gates") + "?workspace=team-b").status_code == 200


def test_a_traces_token_whose_binding_points_into_another_workspace_sends_nothing_there(client, two):
    """Not something the page makes (its choices are the workspace's): a binding moved by hand is refused as no
    binding is, and nothing is written into B."""
    a, b, lead_a, *_ = two
    es_a, es_b = make_eval_set("traces-a", a), make_eval_set("traces-b", b)
    token = traces_token(client, lead_a, es_a)
    body = export(refund_trace()).SerializeToString()
    binding = TraceBinding.objects.get()
    TraceBinding.objects.filter(pk=binding.pk).update(eval_set=es_b)
    moved = post(client, body, token)
    GateToken.objects.filter(trace_binding=binding).update(trace_binding=None)
    unbound = post(client, body, token)
    assert moved.status_code == 403 and same_answer(moved, unbound)
    assert not Output.objects.filter(case__eval_set=es_b).exists()
    GateToken.objects.filter(project="refund-bot CI").update(trace_binding=binding)
    TraceBinding.objects.filter(pk=binding.pk).update(eval_set=es_a)
    assert post(client, body, token).status_code == 200  # the negative control: home again, it is taken
