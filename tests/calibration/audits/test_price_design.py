"""The price of gating models the default design (issue 38, item 5): the design a plan starts with when the lead
names none (the model's default, the start form's initial value and what the form makes of an empty choice) is the
one calibration.stats.audit_forecast's price was fitted on. Change the default and this fails until the price is
refitted for it (bench/audit_price.py)."""

from __future__ import annotations

import inspect

from calibration.audits.forms import AuditPlanForm
from calibration.audits.plans import start_plan
from calibration.models import AuditPlan
from calibration.stats.audit_forecast import PRICED_DESIGN


def test_the_price_is_of_the_design_plans_start_with():
    assert AuditPlan._meta.get_field("design").default == PRICED_DESIGN
    assert AuditPlanForm.base_fields["design"].initial == PRICED_DESIGN
    assert inspect.signature(start_plan).parameters["design"].default == PRICED_DESIGN
    # The negative control: the other design is not what the price models.
    assert {d for d in AuditPlan.Design.values if d != PRICED_DESIGN} == {AuditPlan.Design.STRATIFIED}
