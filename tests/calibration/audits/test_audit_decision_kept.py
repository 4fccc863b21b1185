"""An audit plan's decision is kept when first reached, and a later gold change is shown beside it, never in its
place (issue 41): the figures, the plan page, `audit_plan show`, the API, Home and the gate.

Every example is the one of tests/calibration/audits/test_audit_plan.py, worked by hand there: N = 40 at minimum 0.5,
so the
twentieth gold PASS decides PASS at label 20 by the exact rule (20 = 0.5 x 40), and the anytime-valid test decides
nothing before 20 settled gold items. The negative control throughout: before decisions were kept, `decided` was
read afresh from today's gold, so each assertion that the kept PASS survives a change that moves today's reading
failed.
"""

from __future__ import annotations

import hashlib
import io
import json

import jsonschema
import pytest
from django.core.management import call_command
from django.urls import reverse
from django.utils import timezone

from calibration.audits import kept
from calibration.audits.figures import plan_figures
from calibration.audits.plans import AuditPlanError, release_plan_next
from calibration.models import AuditPlanDecision, GateResult
from calibration.stats import audit_stats
from labeling.models import AuditOrderItem
from tests.api.test_api_audit import published
from tests.api_helpers import call, create_token
from tests.audit_helpers import candidate, gold, in_order, one_pass_short, plan_on, settle
from tests.calibration.audits.test_audit_stratified_plan import mixed, plan_candidate, start
from tests.calibration.gate.test_audit_gate import gate
from tests.overview.test_inbox import section

pytestmark = pytest.mark.django_db


def decided_at_twenty(**mark):
    """The plan decided PASS at label 20, read once (which keeps it): the candidate, the plan, its order."""
    c = candidate(n=40, **mark)
    plan = plan_on(c, release=40)
    order = in_order(plan)
    for output in order[:20]:
        gold(c, output, "PASS")
    assert plan_figures(plan).decided == "PASS"
    return c, plan, order


def overrule_to_cant_tell(c, order, count: int = 2) -> None:
    """A reviewer overrules the first `count` agreed PASS labels with Can't tell: 20 - count passes and 20 - count
    settled items, short of both the exact rule's 20 and the test's 20, so today's gold reads undecided."""
    for output in order[:count]:
        settle(c, output, "ABSTAIN")


def overrule_to_fail(c, order) -> None:
    """One more label (FAIL) arrives after the decision, then a reviewer overrules all 20 passes with FAIL: 21 fails
    of 40 leave at most 19 passes < 0.5 x 40 (the exact rule) and not one pass, so today's gold reads FAIL."""
    gold(c, order[20], "FAIL")
    for output in order[:20]:
        settle(c, output, "FAIL")


# --- kept at first reach ------------------------------------------------------------------------------


def test_the_decision_is_kept_when_first_reached_with_its_label_gold_figures_time_and_policy():
    c, plan, order = one_pass_short(release=40)
    plan_figures(plan)
    assert not AuditPlanDecision.objects.exists()  # undecided: nothing kept
    gold(c, order[19], "PASS")
    before = timezone.now()
    plan_figures(plan)
    kept = AuditPlanDecision.objects.get(plan=plan)
    assert (kept.decided, kept.decided_by, kept.at_label, kept.n_labeled) == ("PASS", "exact", 20, 20)
    assert kept.gold == [[o.pk, "PASS"] for o in order[:20]]
    by_id = json.dumps(sorted([o.pk, "PASS"] for o in order[:20]), separators=(",", ":"))
    assert kept.gold_digest == hashlib.sha256(by_id.encode()).hexdigest()
    assert (kept.figures["n_labeled"], kept.figures["n_gold"], kept.figures["N"], kept.figures["estimate"]) == (
        20,
        20,
        40,
        1.0,
    )
    assert kept.figures["lower"] >= 0.5
    assert (kept.min_pass_rate, kept.confidence, kept.design) == (plan.min_pass_rate, plan.confidence, "uniform")
    assert kept.decided_at >= before
    # Read again, it is the same row: written once.
    f = plan_figures(plan)
    assert AuditPlanDecision.objects.get(plan=plan).decided_at == kept.decided_at
    assert (f.decided, f.decided_at, f.reads_now, f.kept.gold_changed, f.kept.differs) == ("PASS", 20, "PASS", 0, False)
    assert f.kept.since == "no gold label changed since"


def test_a_second_keep_returns_the_first_decision():
    c, plan, order = decided_at_twenty()
    first = AuditPlanDecision.objects.get(plan=plan)
    overrule_to_fail(c, order)
    fresh = type(plan).objects.get(pk=plan.pk)  # a reader that has not seen the kept row
    other = plan_figures(fresh)  # reads the stored one; and keep() itself claims once:
    assert other.decided == "PASS"
    fail = audit_stats.audit_decision(gold=[0.0] * 21, verdicts=[1.0] * 40, minimum=0.5)
    assert kept.keep(fresh, fail, [[1, "FAIL"]]).decided == "PASS"
    assert AuditPlanDecision.objects.get(plan=plan).gold == first.gold


def test_a_stricter_reading_keeps_nothing():
    # The gate may read at a caller's stricter minimum; what it reads there is not the plan's decision.
    c, plan, order = one_pass_short(release=40)
    gold(c, order[19], "PASS")
    f = plan_figures(plan, minimum=0.9)
    assert f.kept is None and not AuditPlanDecision.objects.exists()


# --- a later gold change --------------------------------------------------------------------------------


def test_an_overrule_keeps_the_decision_and_says_how_todays_gold_reads():
    c, plan, order = decided_at_twenty()
    overrule_to_cant_tell(c, order)
    f = plan_figures(plan)
    assert (f.decided, f.decided_at, f.decided_by) == ("PASS", 20, "exact")  # before issue 41: None
    assert f.reads_now is None and f.kept.differs
    assert f.kept.gold_changed == 2
    assert f.kept.since == "2 gold labels changed since; on today's gold it reads undecided"
    day = timezone.localtime(f.kept.decided_at)
    assert f.kept.words == f"decided PASS at label 20 on {day.day} {day:%b %Y}; " + f.kept.since
    # Still decided: nothing more is released for it (a new plan is the way to read today's gold).
    with pytest.raises(AuditPlanError, match="is decided: PASS at label 20"):
        release_plan_next(plan=plan, by=c.lead, k=5)


def test_an_overrule_that_flips_todays_reading_to_fail_keeps_pass():
    c, plan, order = decided_at_twenty()
    overrule_to_fail(c, order)
    f = plan_figures(plan)
    assert (f.decided, f.reads_now) == ("PASS", "FAIL")
    assert f.kept.since == "20 gold labels changed since; on today's gold it reads FAIL"


def test_a_change_that_reads_the_same_says_it_still_reads_so():
    # 19 passes and one N/A of 20:
    # tests/calibration/audits/test_audit_plan.py::test_gold_na_is_outside_the_pass_rate_as_in_the_gate
    # decides PASS on that gold, by the test at label 20.
    c, plan, order = decided_at_twenty()
    settle(c, order[0], "NOT_APPLICABLE")
    f = plan_figures(plan)
    assert (f.decided, f.reads_now, f.kept.differs) == ("PASS", "PASS", False)
    assert f.kept.since == "1 gold label changed since; on today's gold it still reads PASS"


def test_without_a_gold_change_no_change_is_reported():
    # The negative control of the count: a label after the decided prefix is new gold, not a changed one.
    c, plan, order = decided_at_twenty()
    gold(c, order[20], "FAIL")
    f = plan_figures(plan)
    assert (f.n_labeled, f.decided, f.kept.gold_changed) == (21, "PASS", 0)
    assert f.kept.since == "no gold label changed since"


# --- where it is shown ------------------------------------------------------------------------------------


def test_the_plan_page_shows_the_kept_decision_and_the_changed_gold(client):
    c, plan, order = decided_at_twenty()
    client.force_login(c.lead)
    page = client.get(reverse("calibration:audit_plan", args=[plan.pk])).content.decode()
    assert "Kept as the plan's decision: decided PASS at label 20 on " in page
    assert "no gold label changed since." in page and 'role="alert"' not in page
    overrule_to_cant_tell(c, order)
    page = client.get(reverse("calibration:audit_plan", args=[plan.pk])).content.decode()
    assert 'id="audit-decision">PASS<' in page  # the kept decision, not today's "not yet"
    assert "2 gold labels changed since; on today&#x27;s gold it reads undecided." in page
    assert "The gate does not decide on this plan while today's gold reads otherwise" in page
    listing = client.get(reverse("calibration:audit_plans")).content.decode()
    assert "gold changed: today it reads undecided" in listing


def test_the_command_shows_it_as_text_and_json():
    c, plan, order = decided_at_twenty()
    overrule_to_fail(c, order)
    out = io.StringIO()
    call_command("audit_plan", "show", str(plan.pk), stdout=out)
    text = out.getvalue()
    assert "decided: PASS (at label 20, by the exact rule)" in text
    assert "20 gold labels changed since; on today's gold it reads FAIL" in text
    assert "warning: the gate does not decide on this plan" in text
    out = io.StringIO()
    call_command("audit_plan", "show", str(plan.pk), "--format", "json", stdout=out)
    body = json.loads(out.getvalue())
    assert (body["decided"], body["reads_now"]) == ("PASS", "FAIL")
    kept = body["kept"]
    assert (kept["decided"], kept["at_label"], kept["gold_changed"], kept["reads_now"], kept["differs"]) == (
        "PASS",
        20,
        20,
        "FAIL",
        True,
    )


def test_the_api_shows_it_as_its_schema_says(client):
    c, plan, order = decided_at_twenty()
    overrule_to_cant_tell(c, order)
    token = create_token(client, c.lead, ["audit"], c.rubric_version)
    response = call(client, "GET", f"/api/audit-plans/{plan.pk}", token)
    body = response.json()
    assert (body["decided"], body["reads_now"], body["kept"]["gold_changed"]) == ("PASS", None, 2)
    assert body["kept"]["words"].endswith("2 gold labels changed since; on today's gold it reads undecided")
    schema = client.get("/api/openapi.json").json()
    found = schema["paths"]["/api/audit-plans/{plan_id}"]["get"]["responses"]["200"]["content"]["application/json"]
    answer = published(schema, found["schema"])
    jsonschema.validate(body, answer, cls=jsonschema.Draft202012Validator)
    broken = {**body, "kept": {**body["kept"], "gold_changed": "two"}}  # the schema reads the kept part
    assert not jsonschema.Draft202012Validator(answer).is_valid(broken)


def test_home_shows_the_changed_gold_beside_the_kept_decision(client):
    c, plan, order = decided_at_twenty()
    client.force_login(c.lead)
    decided = section(client.get(reverse("home")).content.decode(), "audit_decided")
    assert "decided PASS at label 20 of 40: its labels are no longer needed" in decided
    overrule_to_fail(c, order)
    decided = section(client.get(reverse("home")).content.decode(), "audit_decided")
    assert "the audit of correct_amount on rc-1 with gpt-judge decided PASS at label 20 on " in decided
    assert (
        "; 20 gold labels changed since; on today's gold it reads FAIL: the gate does not decide on it until the "
        "changed gold is reviewed" in decided.replace("&#x27;", "'")
    )


# --- the gate -------------------------------------------------------------------------------------------------


def test_the_gate_refuses_a_kept_decision_todays_gold_reads_otherwise_and_keeps_its_record():
    c, plan, order = decided_at_twenty(decide_on="audit")
    code, out, err = gate()
    assert code == 0, err
    passed = GateResult.objects.get()
    record = json.loads(json.dumps(passed.result))
    overrule_to_fail(c, order)
    code, out, err = gate()
    # Before issue 41 the gate read today's gold afresh: FAIL (exit 1), the PASS it gave gone without a trace.
    assert code == 2 and json.loads(out)["passed"] is None
    assert f"cannot decide: correct_amount's audit plan {plan.pk} decided PASS at label 20 on " in err
    assert "20 gold labels changed since; on today's gold it reads FAIL" in err
    assert "a lead reviews the changed gold on the plan's page, then closes the plan and starts a new one" in err
    passed.refresh_from_db()
    assert passed.result == record and passed.decision == "passed"


def test_the_gate_decides_on_the_kept_decision_where_todays_gold_still_reads_it():
    c, plan, order = decided_at_twenty(decide_on="audit")
    settle(c, order[0], "NOT_APPLICABLE")  # still reads PASS (test above)
    code, out, err = gate()
    assert code == 0, err
    row = json.loads(out)["criteria"][0]
    assert (row["audit_decided"], row["audit_plan"]) == ("PASS", plan.pk)


def test_a_stratified_plans_decision_is_kept_the_same_way():
    # N = 40 at minimum 0.3: 12 gold passes (0.3 x 40) settle PASS by the exact rule; a Can't tell overruling one of
    # them leaves 11 passes and 11 settled items, short of the rule and of the test's 20: today reads undecided.
    lead, rv, judge, eval_set, outputs = mixed()
    plan = start(lead, rv, judge, eval_set)
    release_plan_next(plan=plan, by=lead, k=25)
    plan.refresh_from_db()
    released = AuditOrderItem.objects.filter(order=plan.order, released=True).values_list("output", flat=True)
    chosen = [o for o in outputs if o.pk in set(released)][:12]
    for output in chosen:
        gold(plan_candidate(rv), output, "PASS")
    assert plan_figures(plan).decided == "PASS"
    kept = AuditPlanDecision.objects.get(plan=plan)
    assert (kept.decided, kept.design, kept.figures["n_gold"]) == ("PASS", "stratified", 12)
    settle(plan_candidate(rv), chosen[0], "ABSTAIN")
    f = plan_figures(plan)
    assert (f.decided, f.reads_now, f.kept.gold_changed) == ("PASS", None, 1)
    assert f.kept.since == "1 gold label changed since; on today's gold it reads undecided"
