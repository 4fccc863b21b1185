"""The pages the traces receiver adds to: the eval set page's traces summary and the gate page's token panel with
its traces fields, in Chromium at 1366x768 and 1920x1080: no sideways scrolling, the summary above the fold."""

from __future__ import annotations

import pytest
from playwright.sync_api import expect

from api.models import GateToken, TokenScope, hash_token
from evals.models import Role
from formats.models import TraceBinding, TraceOutcome
from tests.factories import default_workspace, make_eval_set, make_output, make_rubric_version, make_user

from .browser_helpers import screenshot

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]

OVERFLOW = "() => document.documentElement.scrollWidth - document.documentElement.clientWidth"
REFUSED = (
    "the trace gives no input and final response: set input.value/output.value on the root span, or send LLM "
    "spans with llm.input_messages/llm.output_messages (OpenInference) or gen_ai.input.messages/gen_ai.output.messages"
)


@pytest.fixture
def traced_set(db):
    lead = make_user("lee-traces", Role.LEAD)
    es = make_eval_set("support-traces")
    for i in range(3):
        make_output(es, case_id=f"ticket-{i}")
    binding = TraceBinding.objects.create(eval_set=es, sample_one_in=10, root_span_name="support-agent")
    GateToken.objects.create(
        workspace=default_workspace(), project="support-bot", rubric_version=make_rubric_version(),
        scopes=[TokenScope.TRACES],
        trace_binding=binding, eval_set_pattern=es.name, token_hash=hash_token("icw_t"), hint="icw_t", created_by=lead,
    )  # fmt: skip
    TraceOutcome.objects.bulk_create(
        [TraceOutcome(binding=binding, trace_id=f"{i:032x}", status=TraceOutcome.Status.OUTPUT) for i in range(3)]
        + [TraceOutcome(binding=binding, trace_id=f"{i:032x}", status="sampled_out") for i in range(3, 30)]
        + [TraceOutcome(binding=binding, trace_id="f" * 32, status="rejected", reason=REFUSED, late_spans=12)]
    )
    return lead, es


@pytest.mark.parametrize("size", [(1366, 768), (1920, 1080)])
def test_the_traces_summary_and_the_token_panel_fit_the_screen(live_server, new_page, traced_set, size):
    lead, es = traced_set
    page = new_page(*size)
    page.goto(live_server.url + "/accounts/login/")
    page.get_by_label("Username").fill(lead.username)
    page.get_by_label("Password").fill("pw-for-tests-1")
    page.get_by_role("button", name="Log in").click()

    page.goto(f"{live_server.url}/sets/{es.pk}/")
    summary = page.locator("#trace-summary")
    expect(summary).to_contain_text("31 finished · 3 made outputs · 27 sampled out · 1 refused")
    expect(summary).to_contain_text("1 refused: the trace gives no input and final response")
    expect(summary).to_contain_text("12 late spans: came after their traces were finished, in no output")
    box = summary.bounding_box()
    assert box is not None and box["y"] + box["height"] <= size[1]  # above the fold
    assert page.evaluate(OVERFLOW) == 0
    screenshot(page, f"otel-eval-set-{size[0]}")

    page.goto(live_server.url + "/api/gates/")
    expect(page.locator("#token-panel")).to_contain_text("traces into support-traces, root span support-agent")
    expect(page.get_by_label("Traces go into")).to_be_visible()
    expect(page.get_by_label("Root span name")).to_be_visible()
    expect(page.get_by_label("Root span kind")).to_be_visible()
    expect(page.get_by_label("Version attribute")).to_have_value("service.version")
    assert page.evaluate(OVERFLOW) == 0
    page.get_by_label("Traces go into").scroll_into_view_if_needed()
    screenshot(page, f"otel-token-panel-{size[0]}")
