"""The audit plan pages (issue 22): a lead starts a plan, releases the next k outputs and reads the figures as gold
arrives; reviewers read; annotators see nothing of it."""

from __future__ import annotations

import pytest
from django.db import connection
from django.test import Client
from django.test.utils import CaptureQueriesContext
from django.urls import reverse

from calibration.models import AuditPlan, GatingMark
from labeling.models import AuditOrder
from tests.audit_helpers import KEY, candidate, gold, in_order, one_pass_short, plan_on, settle
from tests.factories import bulk_verdicts, make_eval_set, make_user, open_queue

pytestmark = pytest.mark.django_db
START = reverse("calibration:audit_plan_start")
PLANS = reverse("calibration:audit_plans")
# The memberships are the one query every signed-in request now reads (issue 36): 15, was 14.
QUERY_BOUND = 15


def url(name: str, plan) -> str:
    return reverse(f"calibration:{name}", args=[plan if isinstance(plan, int) else plan.pk])


def start_form(c, **extra) -> dict:
    return {"gating": GatingMark.objects.get().pk, "eval_set": c.eval_set.pk, **extra}


def released(plan) -> int:
    return AuditOrder.objects.get(pk=plan.order_id).released


# --- starting a plan -----------------------------------------------------------------------------


def test_a_lead_starts_a_plan_with_the_marks_thresholds_and_lands_on_its_page(client):
    c = candidate(n=12, min_pass_rate=0.6, confidence=0.9)
    client.force_login(c.lead)
    page = client.get(START).content.decode()
    assert "correct_amount of refund@1, judged by gpt-judge (minimum 0.6 at 0.9)" in page
    response = client.post(START, start_form(c, seed="42"))
    plan = AuditPlan.objects.get()
    assert response.status_code == 302 and response["Location"] == url("audit_plan", plan)
    assert (plan.min_pass_rate, plan.confidence, plan.order.seed, plan.created_by) == (0.6, 0.9, 42, c.lead)
    body = client.get(response["Location"]).content.decode()
    assert "Audit plan" in body and "<strong>0</strong> of 12" in body and "not yet" in body


def test_a_stricter_threshold_and_an_agent_version_are_taken():
    c = candidate(n=12)
    client = Client()
    client.force_login(c.lead)
    response = client.post(START, start_form(c, min_pass_rate="0.7", confidence="0.99", agent_version="default"))
    plan = AuditPlan.objects.get()
    assert response.status_code == 302
    assert (plan.min_pass_rate, plan.confidence, plan.agent_version) == (0.7, 0.99, "default")


@pytest.mark.parametrize(
    "extra, words",
    [
        ({"min_pass_rate": "0.3"}, "may not be looser than the gating mark"),
        ({"confidence": "0.5"}, "may not be looser than the gating mark"),
        ({"min_pass_rate": "1.5"}, "min_pass_rate"),
        ({"min_pass_rate": "nan"}, "Enter a finite number."),
        ({"seed": "-1"}, "greater than or equal to 0"),
        ({"gating": "999999"}, "Choose a criterion that gates"),
        ({"eval_set": "999999"}, "Choose an eval set that exists."),
        ({"agent_version": "v-unknown"}, "Choose an agent version that has outputs."),
        ({"design": "random"}, "Select a valid choice. random is not one of the available choices."),
    ],
)
def test_bad_input_is_refused_with_clear_words_and_what_was_typed_stays(client, extra, words):
    c = candidate(n=12)
    client.force_login(c.lead)
    response = client.post(START, start_form(c, **extra))
    body = response.content.decode()
    assert response.status_code == 422 and words in body
    assert not AuditPlan.objects.exists() and not AuditOrder.objects.exists()
    # What the lead chose is still chosen (the eval set, unless it was the bad part).
    if "eval_set" not in extra:
        assert f'<option value="{c.eval_set.pk}" selected>' in body


def test_the_calibration_set_and_a_version_the_candidate_lacks_are_refused_by_the_service(client):
    c = candidate(n=12)
    bulk_verdicts(make_eval_set("other"), c.rubric_version, c.judge, {KEY: {"PASS": 2}}, agent_version="v9")
    bulk_verdicts(c.calibration, c.rubric_version, c.judge, {KEY: {"PASS": 2}})
    open_queue(c.calibration, c.rubric_version, c.lead)
    client.force_login(c.lead)
    on_calibration = client.post(START, start_form(c, eval_set=c.calibration.pk)).content.decode()
    assert "is the calibration set of correct_amount" in on_calibration and "Nothing was started." in on_calibration
    lacking = client.post(START, start_form(c, agent_version="v9")).content.decode()
    assert "rc-1 has no outputs of agent version &#x27;v9&#x27;" in lacking
    assert not AuditPlan.objects.exists()


def test_a_second_open_plan_on_the_same_criterion_and_candidate_is_refused(client):
    c = candidate(n=12)
    plan_on(c)
    client.force_login(c.lead)
    response = client.post(START, start_form(c))
    assert response.status_code == 422 and "already has an open audit plan" in response.content.decode()
    assert AuditPlan.objects.count() == 1


# --- roles and CSRF ------------------------------------------------------------------------------


def test_annotators_get_403_everywhere_and_reviewers_read_only(client):
    c = candidate(n=12)
    plan = plan_on(c)
    annotator = make_user("ann", "annotator")
    reviewer = make_user("rev", "reviewer")
    client.force_login(annotator)
    for address in (PLANS, START, url("audit_plan", plan), url("audit_plan_figures", plan)):
        assert client.get(address).status_code == 403
    for address in (START, url("audit_plan_release", plan), url("audit_plan_close", plan)):
        assert client.post(address, {"k": 5}).status_code == 403
    client.force_login(reviewer)
    assert client.get(PLANS).status_code == 200
    page = client.get(url("audit_plan", plan))
    assert page.status_code == 200 and "Label these next" not in page.content.decode()
    assert "Close the plan" not in page.content.decode()
    assert client.get(url("audit_plan_figures", plan)).status_code == 200
    assert client.get(START).status_code == 403
    assert client.post(url("audit_plan_release", plan), {"k": 5}).status_code == 403
    assert client.post(url("audit_plan_close", plan)).status_code == 403
    client.logout()
    assert client.get(url("audit_plan", plan))["Location"].startswith(reverse("login"))
    assert released(plan) == 0 and AuditPlan.objects.get().closed_at is None


def test_the_menu_shows_audits_to_staff_only(client):
    c = candidate(n=4)
    client.force_login(c.lead)
    assert f'href="{PLANS}"' in client.get(reverse("calibration:gates")).content.decode()
    client.force_login(make_user("ann", "annotator"))
    assert PLANS not in client.get(reverse("home")).content.decode()


def test_release_start_and_close_need_the_csrf_token():
    c = candidate(n=12)
    plan = plan_on(c)
    strict = Client(enforce_csrf_checks=True)
    strict.force_login(c.lead)
    assert strict.post(url("audit_plan_release", plan), {"k": 5}, headers={"HX-Request": "true"}).status_code == 403
    assert strict.post(url("audit_plan_close", plan)).status_code == 403
    assert strict.post(START, start_form(c)).status_code == 403
    assert released(plan) == 0 and AuditPlan.objects.get().closed_at is None
    # The page's htmx posts carry the token: base.html sends it in hx-headers on <body>.
    page = strict.get(url("audit_plan", plan)).content.decode()
    assert "X-CSRFToken" in page and 'hx-post="' + url("audit_plan_release", plan) + '"' in page


# --- label these k next --------------------------------------------------------------------------


def test_label_these_k_next_releases_k_and_tells_the_figures_to_reread(client):
    c = candidate(n=40)
    plan = plan_on(c)
    client.force_login(c.lead)
    page = client.get(url("audit_plan", plan)).content.decode()
    assert 'name="k" id="id_k" min="1" max="40" value="25"' in page  # the default k
    response = client.post(url("audit_plan_release", plan), {"k": "25"}, headers={"HX-Request": "true"})
    body = response.content.decode()
    assert response.status_code == 200 and response["HX-Trigger"] == '{"audit-released": {}}'
    assert body.lstrip().startswith('<section class="card audit-release" id="audit-release">')
    assert "first 25 of 40 outputs" in body and 'max="15"' in body and released(plan) == 25
    # Without htmx: a redirect to the page, the same release.
    plain = client.post(url("audit_plan_release", plan), {"k": "10"})
    assert plain.status_code == 302 and released(plan) == 35


@pytest.mark.parametrize(
    "k, words",
    [
        ("0", "Release at least one output."),
        ("-3", "Release at least one output."),
        ("ten", "Enter a whole number of outputs."),
        ("", "This field is required."),
        ("1000000000000", "release at most 40"),
    ],
)
def test_a_bad_k_is_refused_with_clear_words_and_releases_nothing(client, k, words):
    c = candidate(n=40)
    plan = plan_on(c)
    client.force_login(c.lead)
    htmx = client.post(url("audit_plan_release", plan), {"k": k}, headers={"HX-Request": "true"})
    assert htmx.status_code == 422 and htmx["Content-Type"].startswith("text/plain")
    assert htmx.content.decode() == f"Nothing released: {words}" or words in htmx.content.decode()
    page = client.post(url("audit_plan_release", plan), {"k": k}, follow=True).content.decode()
    assert "Nothing released:" in page and words in page
    assert released(plan) == 0


def test_once_all_are_released_the_control_says_so(client):
    c = candidate(n=12)
    plan = plan_on(c, release=12)
    client.force_login(c.lead)
    response = client.post(url("audit_plan_release", plan), {"k": "1"}, headers={"HX-Request": "true"})
    assert response.status_code == 422 and "Every output of the order is already released." in response.content.decode()


def test_an_unknown_plan_is_404_on_every_address(client):
    c = candidate(n=4)
    client.force_login(c.lead)
    for name in ("audit_plan", "audit_plan_figures"):
        assert client.get(url(name, 999999)).status_code == 404
    for name in ("audit_plan_release", "audit_plan_close"):
        assert client.post(url(name, 999999), {"k": 5}).status_code == 404


def test_a_closed_plan_keeps_its_figures_releases_nothing_and_stops_polling(client):
    c = candidate(n=40)
    plan = plan_on(c, release=5)
    client.force_login(c.lead)
    assert client.post(url("audit_plan_close", plan)).status_code == 302
    assert AuditPlan.objects.get().closed_at is not None
    again = client.post(url("audit_plan_close", plan), follow=True).content.decode()
    assert "was already closed" in again
    page = client.get(url("audit_plan", plan)).content.decode()
    assert "closed" in page and "Label these next" not in page and "hx-trigger" not in page
    refused = client.post(url("audit_plan_release", plan), {"k": "5"}, headers={"HX-Request": "true"})
    assert refused.status_code == 422 and f"Audit plan {plan.pk} is closed." in refused.content.decode()
    assert released(plan) == 5
    assert client.get(url("audit_plan_figures", plan)).status_code == 286
    listing = client.get(PLANS).content.decode()
    assert listing.index('id="closed"') < listing.index(url("audit_plan", plan))


# --- the figures ---------------------------------------------------------------------------------


def test_the_figures_poll_until_the_decision_then_stop(client):
    # By hand (as tests/calibration/audits/test_audit_plan.py): N = 40, minimum 0.5: 20 gold passes alone reach 0.5 x
    # 40, so the
    # exact rule decides PASS at label 20; at 19 nothing is decided and the test waits for 20 gold items.
    c, plan, order = one_pass_short(release=40)
    client.force_login(c.lead)
    waiting = client.get(url("audit_plan_figures", plan))
    body = waiting.content.decode()
    assert waiting.status_code == 200 and 'hx-trigger="every 5s, audit-released from:body"' in body
    assert "<strong>19</strong> of 40" in body and "The test decides nothing before 20 gold items (19 so far)" in body
    assert "Forecast" in body and "not a promise" in body and "after the next 25 labels" in body
    assert "<strong>21</strong> of 40" in body  # not labeled yet
    gold(c, order[19], "PASS")
    decided = client.get(url("audit_plan_figures", plan))
    body = decided.content.decode()
    assert decided.status_code == 286 and "hx-trigger" not in body
    assert 'id="audit-decision">PASS<' in body and "PASS at label 20 of 40, by the exact rule" in body
    assert "Labels saved" in body and "<strong>20</strong> of 40" in body and "Forecast" not in body
    assert "[0.500, 1.000]" in body or "1.000]" in body


def test_the_list_shows_where_each_open_plan_stands(client):
    # By hand as above: 19 gold passes of 40 at minimum 0.5 decide nothing; the 20th is PASS by the exact rule.
    c, plan, order = one_pass_short(release=40)
    client.force_login(c.lead)
    row = _row(client.get(PLANS).content.decode(), plan)
    assert "19 of 40" in row and ">not yet<" in row and "more labels" in row
    gold(c, order[19], "PASS")
    row = _row(client.get(PLANS).content.decode(), plan)
    assert "20 of 40" in row and "decision-passed" in row and ">PASS<" in row and "more labels" not in row
    client.post(url("audit_plan_close", plan))
    listing = client.get(PLANS).content.decode()
    closed = listing[listing.index('id="closed"') :]
    assert url("audit_plan", plan) in closed and "PASS" not in closed and "Decision" not in closed


def _row(listing: str, plan) -> str:
    start = listing.index(f'href="{url("audit_plan", plan)}"')
    return listing[start : listing.index("</tr>", start)]


def test_gold_cant_tell_is_named_with_a_link_to_overrule_it_until_the_plan_decides(client):
    # By hand: 40 outputs at minimum 0.5, the first 20 of the order gold PASS; a reviewer settles the first as
    # Can't tell, so 19 passes count (one short of the exact rule's 20) and nothing is decided.
    c, plan, order = one_pass_short(release=40)
    gold(c, order[19], "PASS")
    settle(c, order[0], "ABSTAIN")
    criterion = c.rubric_version.criteria.get(key=KEY)
    link = reverse("labeling:adjudicate", args=[order[0].pk, criterion.pk])
    client.force_login(c.lead)
    body = client.get(url("audit_plan", plan)).content.decode()
    warning = body[body.index('id="audit-cant-tell"') :].split("</p>")[0]
    assert "1 labeled output has gold Can't tell" in warning and "counts against either decision" in warning
    assert f'href="{link}">{order[0].case.case_id}</a>' in warning
    reviewer = make_user("ria", "reviewer")
    client.force_login(reviewer)
    assert client.get(link).status_code == 200  # the link leads a reviewer to the overruling form
    assert 'id="audit-cant-tell"' in client.get(url("audit_plan_figures", plan)).content.decode()
    overrule = {"outcome": "PASS", "rationale": "The amount matches the policy.", "based_on": 1}
    assert client.post(link, overrule).status_code == 302  # overruled: 20 passes, PASS by the exact rule
    body = client.get(url("audit_plan", plan)).content.decode()
    assert 'id="audit-cant-tell"' not in body and 'id="audit-decision">PASS<' in body  # negative control


def test_the_forecast_is_the_workers_for_the_next_25_and_k_only_fills_the_release_form(client):
    # Issue 37: the forecast is computed in a worker, once per gold state, for the default release of 25; the
    # page's ?k= no longer asks a request to simulate (it did before: "after the next 7 labels" for ?k=7).
    c = candidate(n=40)
    plan = plan_on(c, release=10)
    client.force_login(c.lead)
    body = client.get(url("audit_plan", plan) + "?k=7").content.decode()
    assert "after the next 25 labels" in body and 'name="k" id="id_k" min="1" max="30" value="7"' in body
    for bad in ("0", "-1", "x", "99999999999"):
        body = client.get(url("audit_plan_figures", plan) + f"?k={bad}").content.decode()
        assert "after the next 25 labels" in body


def test_all_fail_gold_shows_fail_by_the_rule(client):
    # By hand: 21 fails of 40 leave at most 19 passes < 0.5 x 40: FAIL by label 21 at the latest.
    c = candidate(n=40, judge_says="FAIL")
    plan = plan_on(c, release=40)
    for output in in_order(plan)[:21]:
        gold(c, output, "FAIL")
    client.force_login(c.lead)
    body = client.get(url("audit_plan", plan)).content.decode()
    assert 'id="audit-decision">FAIL<' in body and "Label these next" not in body
    assert "The plan is decided (FAIL at label" in body and "its labels are no longer needed" in body


# --- after the decision --------------------------------------------------------------------------


def test_a_decided_plan_offers_no_more_labels_and_says_why_while_an_undecided_one_does(client):
    # By hand: N = 40, minimum 0.5; 19 gold passes decide nothing, the 20th reaches 0.5 x 40 (the exact rule).
    c, plan, order = one_pass_short(release=25)
    client.force_login(c.lead)
    undecided = client.get(url("audit_plan", plan)).content.decode()
    assert ">Label these next</button>" in undecided and "no longer needed" not in undecided  # negative control
    gold(c, order[19], "PASS")
    decided = client.get(url("audit_plan", plan)).content.decode()
    assert ">Label these next</button>" not in decided and 'name="k"' not in decided
    assert "The plan is decided (PASS at label 20 of 40): its labels are no longer needed" in decided
    assert ">Close the plan</button>" in decided  # closing is what is left to do
    assert f"audit_plan next {plan.pk}" in undecided and f"audit_plan next {plan.pk}" not in decided
    refused = client.post(url("audit_plan_release", plan), {"k": "5"}, headers={"HX-Request": "true"})
    words = refused.content.decode()
    assert refused.status_code == 422 and words.startswith(f"Nothing released: Audit plan {plan.pk} is decided")
    assert "PASS at label 20 of 40" in words and released(plan) == 25
    page = client.post(url("audit_plan_release", plan), {"k": "5"}, follow=True).content.decode()
    assert "Nothing released: Audit plan" in page and released(plan) == 25


def test_the_poll_that_brings_the_decision_swaps_the_release_control_out_for_a_lead_only(client):
    c, plan, order = one_pass_short(release=40)
    client.force_login(c.lead)
    assert "hx-swap-oob" not in client.get(url("audit_plan_figures", plan)).content.decode()  # undecided
    gold(c, order[19], "PASS")
    body = client.get(url("audit_plan_figures", plan)).content.decode()
    swap = body.split('id="audit-release" hx-swap-oob="true">', 1)[1]
    assert "its labels are no longer needed" in swap and ">Label these next</button>" not in swap
    client.force_login(make_user("rey", "reviewer"))
    assert "hx-swap-oob" not in client.get(url("audit_plan_figures", plan)).content.decode()  # reads, releases nothing


@pytest.mark.parametrize("n", [20, 120])
def test_the_plan_page_runs_a_bounded_number_of_queries_whatever_n(client, n):
    # plan_figures reads six; the plan, the session, the user, the messages and the menu the rest.
    c = candidate(n=n)
    plan = plan_on(c, release=n)
    for output in in_order(plan)[:10]:
        gold(c, output, "PASS")
    client.force_login(c.lead)
    client.get(url("audit_plan", plan))  # a first view after signing in stores the chosen workspace in the session
    with CaptureQueriesContext(connection) as queries:
        assert client.get(url("audit_plan", plan)).status_code == 200
    assert len(queries) <= QUERY_BOUND


# The plan page's queries (user, memberships, the plan, its stored figures, the gating marks that say the gate's
# levels for it; the session is read from Redis, cached_db), whatever N and the labels.
PLAN_PAGE_QUERIES = 5


@pytest.mark.parametrize(("n", "labeled"), [(40, 0), (40, 30), (400, 0), (400, 30)])
def test_the_plan_page_reads_stored_figures_in_as_many_queries_whatever_the_plan_s_size(client, n, labeled):
    # Issue 37: the page reads one stored row, so its queries do not grow with N or the labels (before, the figures
    # were read and computed in the request: the labels, the gold, the verdicts and the statistics).
    c = candidate(n=n)
    plan = plan_on(c, release=n)
    for output in in_order(plan)[:labeled]:
        gold(c, output, "PASS")
    client.force_login(c.lead)
    client.get(url("audit_plan", plan))  # the worker (played here) computes the figures of this gold
    with CaptureQueriesContext(connection) as queries:
        assert "as of gold change" in client.get(url("audit_plan", plan)).content.decode()
    assert len(queries) == PLAN_PAGE_QUERIES, [q["sql"][:80] for q in queries.captured_queries]


def test_an_undecided_plan_says_where_it_is_heading_and_a_decided_one_does_not(client):
    c, plan, order = one_pass_short(release=40)
    client.force_login(c.lead)
    page = client.get(url("audit_plan", plan)).content.decode()
    assert '<p id="audit-heading"><strong>Heading</strong>: too early to tell (19 of 20 gold labels).' in page
    gold(c, order[19], "PASS")
    assert 'id="audit-heading"' not in client.get(url("audit_plan", plan)).content.decode()  # decided: PASS
